"""A correction said after L2 retention forgot the corrected atom supersedes nothing: both facets stay current.

Finding: with ``ALTM_RETENTION_DAYS_L2`` set and L4 kept (unset, the default: the persona outlives the atoms),
a retention pass forgets the atom "I prefer dark mode in every editor." and keeps its persona facet, flagged
``evidence_forgotten`` (``altm/pipeline/writer/ops/lifecycle.py:182-215``, ``_repair_evidence``). When the user
later corrects it ("I prefer light mode in the editor now, actually."), ``GovernProcessor._facet``
(``altm/pipeline/processors/govern.py:188-200``) looks for the version to supersede among the user's *atoms* of
the facet key only (``reader.atoms_with(..., "facet_key", ...)``, then ``earlier``): the forgotten atom is gone,
so ``earlier`` is empty and nothing is superseded or held for review, though the dark-mode facet is still the
user's current persona version. Recall then returns both "dark mode" and "light mode" as the user's current
preference, for good: the correction the user made is silently ignored by the persona.

Reproduction: turn a-t1 (dark mode, T0) derived; ``admin.retention(T0 + 40 days)`` with
``retention_days_l2=30`` (L4 unset); then turn b-t3 (light mode, a correction, T0 + 50 days) derived. Read the
current L4 facets and search the persona.

Expected: the correction supersedes the facet that is current for its key (the dark-mode facet's
``superseded_by`` names the light-mode facet), so the only current L4 facet of ``preference:mode editor`` is the
light-mode one and recall returns no dark-mode facet.
"""

from __future__ import annotations

from datetime import timedelta

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."


async def test_a_correction_supersedes_a_facet_whose_atom_retention_forgot(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0})
    async with store_with(s, [make_turn(1, DARK, session="a")]) as (rt, app):
        assert await app.admin.retention(T0 + timedelta(days=40)) == 1  # the dark-mode atom
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2'") == []
        light = make_turn(3, LIGHT, session="b").model_copy(update={"timestamp": T0 + timedelta(days=50)})
        await rt.publish([light])
        await rt.run_until_idle()
        current = [str(r["content"]) for r in rows(
            s.data_dir, "SELECT content FROM memories WHERE layer = 'L4' AND superseded_by IS NULL ORDER BY content")]
        hits = [h.content for h in app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical",
                                              top_k=20).hits if h.layer == "L4"]
    assert current == [f"Preference (mode editor): {LIGHT}"], (
        "the corrected facet stays current beside its correction", current)
    assert hits == [f"Preference (mode editor): {LIGHT}"], hits
