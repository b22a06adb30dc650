"""A correction delivered before the statement it corrects supersedes nothing: both versions stay current.

Finding: ``GovernProcessor._facet`` (``altm/pipeline/processors/govern.py:197-200``) looks for a facet's
predecessor only *backwards*: ``earlier`` is the user's atoms of the facet key ordered before the atom being
governed (``order`` = valid time, natural turn id, correction, id: ``processors/facets.py:35-43``). When the
newer statement (a correction, "I prefer light mode in the editor now, actually.", dated ten days later) is
derived first and the older one ("I prefer dark mode in every editor.") arrives afterwards — a backfill of an
older session, an ``altm ingest`` of history after live traffic, a slow agent's partition — the correction
found no earlier atom when it was governed, and the older statement finds no *earlier* atom either (the
correction is later). Nothing looks forwards, so the dark-mode facet is made current and is never superseded
(no supersession, no held action). Delivered in time order the same two turns give the dark version superseded
by the light one. The README promises the opposite ("Derived state is recomputed from what is stored, so the
final state does not depend on arrival order", section "Memory formation"), and recall now answers the user's
persona with the value the user corrected, beside the correction.

Reproduction: turn b-t3 (light mode, a correction, at T0 + 10 days) sent and derived; then turn a-t1 (dark
mode, at T0) sent and derived. Read the L4 facets and run a recall.

Expected: the same state as in time order: the dark-mode facet is superseded by the light-mode facet
(``superseded_by`` = the light facet's id, ``valid_to`` = its valid time), the light facet is the only current
persona version and recall returns no dark-mode facet.
"""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.facets import dark_and_light_facets, dark_then_light
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.turns import SCOPE


async def test_a_correction_delivered_first_still_supersedes_the_older_statement(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    dark, light = dark_then_light()
    async with store_with(s, [light]) as (rt, app):
        await rt.publish([dark])
        await rt.run_until_idle()
        hits = [h.content for h in app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical",
                                              top_k=20).hits if h.layer == "L4"]
    facets = dark_and_light_facets(s.data_dir)
    assert set(facets) == {"dark", "light"}, facets
    assert facets["light"]["superseded_by"] is None
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"], (
        "the corrected dark-mode facet stays current when its correction was delivered first", facets)
    assert not any("dark" in h for h in hits), hits


async def test_the_facet_versions_do_not_depend_on_arrival_order(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    dark, light = dark_then_light()
    in_time, reversed_ = await in_each_order(s, tmp_path / "orders", [], [("in-time", [dark, light]),
                                                                          ("reversed", [light, dark])])
    assert {k: v["superseded_by"] is not None for k, v in dark_and_light_facets(in_time).items()} == {"dark": True,
                                                                                       "light": False}
    assert dark_and_light_facets(reversed_) == dark_and_light_facets(in_time)
