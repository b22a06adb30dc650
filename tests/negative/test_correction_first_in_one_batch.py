"""A correction that comes before the statement it corrects in one batch (an ``altm ingest`` of history, a replay
of a store that received them apart) supersedes nothing: both facet versions stay current, a review item says
"no superseded memory", and the replay of a correct store differs from it.

Finding: commits d481357 / 82ffb0f made ``GovernProcessor._facet`` look forward (altm/pipeline/processors/
govern.py:206-217), but only "once its facet is stored" (``reader.holds(mem.scope, following.memory_id)``,
govern.py:216), claiming "a replay's batch governs it after". It does not. When both atoms are committed before
govern reads either (one batch of turns; every replay, which publishes the host topic in log order) and the
correction comes first in the log:

1. the correction's atom is governed first: ``earlier`` = [the older atom] (committed), so it proposes
   ``supersede(old facet -> new facet)`` (govern.py:201-207) — but the old facet is proposed only later in the
   same batch, so the writer refuses it: "no superseded memory … in scope home" (``target_row``,
   altm/pipeline/writer/ops/_base.py:78-87), filed as a rejection in the user's review queue;
2. the older atom is governed next: ``later`` = [the correction], but its facet is not stored yet (the batch's
   proposals are applied after it), so the forward step is skipped (govern.py:216).

Nothing supersedes the older facet: the stale preference is current beside its correction. The same turns
delivered one at a time (``test_correction_before_corrected.py``) end with the older facet superseded, so
``altm replay`` of that store rebuilds a different state (the supersession missing, a rejection added).

Reproduction: (a) one ``publish`` of [the day-10 correction "I prefer light mode in the editor now, actually.",
the day-0 statement "I prefer dark mode in every editor."]; (b) the same two turns delivered one at a time
(correction first), then ``replay_into`` a fresh data dir.

Expected: in both, the dark facet is superseded by the light facet, the light facet is the only current version,
no rejection is filed, and the replay's state equals its source's.
"""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.facets import dark_and_light_facets, dark_then_light
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows


async def test_a_correction_first_in_one_batch_supersedes_the_older_statement(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    dark, light = dark_then_light()
    async with store_with(s, [light, dark]):  # one publish: the correction first (a file of history)
        pass
    facets = dark_and_light_facets(s.data_dir)
    rejections = [r["reason"] for r in rows(s.data_dir, "SELECT reason FROM rejections")]
    assert set(facets) == {"dark", "light"}, facets
    assert facets["light"]["superseded_by"] is None
    # actual: None (both current) and a rejection "no superseded memory mem_… in scope home 'acme/platform/dana'"
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"], facets
    assert rejections == [], rejections


async def test_the_replay_of_a_correction_delivered_first_rebuilds_its_supersession(settings: Settings,
                                                                                    tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    dark, light = dark_then_light()
    async with store_with(s, [light]) as (rt, _):
        await rt.publish([dark])
        await rt.run_until_idle()
    facets = dark_and_light_facets(s.data_dir)
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"]  # delivered apart: superseded
    # actual: the replay leaves the dark facet current and files a rejection (memories, rejections, ... differ)
    await replayed_equal(s, tmp_path / "replayed")
