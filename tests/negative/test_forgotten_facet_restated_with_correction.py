"""A preference said again after retention forgot its facet, delivered in one batch with its correction, stays
current beside the correction.

Finding: the backward step of ``GovernProcessor._facet`` (altm/pipeline/processors/govern.py:200-209) makes the
previous version's facet when it is not stored yet (a correction governed before what it corrects in one batch),
unless ``reader.removed(...)`` says the facet was removed (govern.py:206). ``MemoryReader.removed``
(altm/store/_reader.py:65-71) answers whether the audit log has *ever* had a ``forget`` or ``erase`` of that id;
but a facet's id is its statement's (``facet_version``, altm/pipeline/processors/facets.py:28:
``[home, "L4", facet_key, norm(content)]``), and a facet retention forgot is stored again under the same id when
the user says it again (README: "a facet said again after retention forgot it, stored under the same id";
``test_forgotten_signals_come_back.py``). So once a retention pass has forgotten "dark mode" long ago, a
restatement of it and a correction delivered together (one host batch, ``altm ingest``, one Kafka poll, a
replay) go: governing the correction, ``previous`` = the dark facet, not stored, ``removed`` is True (the old
forget) -> ``previous = None``, no supersede step; governing the restatement re-makes the dark facet, but its
forward step needs the light facet stored (govern.py ``reader.holds(mem.scope, following.memory_id)``) and it is
only an earlier proposal of the batch. Both facets end current: the persona answers the corrected value beside
its correction. Delivered one at a time the same turns leave dark superseded by light, so the state depends on
how the turns were batched (README: the final state does not depend on arrival order). A replay batches what
the source took one at a time: replaying the one-at-a-time data dir (``altm replay --into``) drops the supersession
and its decision, so the restore check fails (``state-hash`` differs) for a data dir that did nothing unusual.

Reproduction: embedded runtime, no embedder, ``retention_days_l4=30``. Agent ``coder`` hears "I prefer dark mode
in every editor." (day 0, session a); ``admin.retention`` at day 90 forgets the facet (the atom stays). Then agent
``reviewer`` of the same user hears "I prefer dark mode in every editor." (day 100, session b) and "I prefer light
mode in the editor now, actually." (day 101, session c), published in one ``publish``. Compare with the same two
turns published one at a time, and with a replay of that data dir.

Expected: as one at a time: the dark facet (stored again) is superseded by the light facet and the light facet is
current, and the replay of the one-at-a-time data dir has its state (e.g. ``removed`` counts only a removal not
followed by the facet being made again: a forget counts while its tombstone stands, or the check looks at whether
the restating atoms postdate the forget; or the step to a facet proposed in this batch is made regardless of an
old forget).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from altm.core import TurnEvent
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})


def _at(turn: TurnEvent, days: int) -> TurnEvent:
    return turn.model_copy(update={"timestamp": T0 + timedelta(days=days)})


def _facets(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {("light" if "light" in str(r["content"]) else "dark"): r for r in rows(
        data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}


async def _facets_after(settings: Settings, *, together: bool) -> dict[str, dict[str, Any]]:
    dark_again = _at(make_turn(2, DARK, session="b", scope=REVIEWER), 100)
    light = _at(make_turn(3, LIGHT, session="c", scope=REVIEWER), 101)
    async with store_with(settings, [make_turn(1, DARK, session="a")]) as (rt, app):
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
        assert _facets(settings.data_dir) == {}  # the dark facet forgotten (its atom kept)
        batches = [[dark_again, light]] if together else [[dark_again], [light]]
        for batch in batches:
            await rt.publish(batch)
            await rt.run_until_idle()
    return _facets(settings.data_dir)


async def test_a_correction_batched_with_a_restatement_of_a_forgotten_facet_supersedes_it(
        settings: Settings, tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    one_at_a_time = await _facets_after(base.model_copy(update={"data_dir": tmp_path / "apart"}), together=False)
    assert one_at_a_time["dark"]["superseded_by"] == one_at_a_time["light"]["memory_id"], one_at_a_time
    together = await _facets_after(base.model_copy(update={"data_dir": tmp_path / "together"}), together=True)
    assert set(together) == {"dark", "light"}, together
    assert together["light"]["superseded_by"] is None, together
    # actual: None — the restated dark facet stays current beside its correction
    assert together["dark"]["superseded_by"] == together["light"]["memory_id"], (
        "an old retention forget of the dark facet stopped the correction from superseding its restatement",
        together)
    assert together == one_at_a_time


async def test_a_replay_of_a_correction_of_a_restated_forgotten_facet_gives_the_source_state(
        settings: Settings, tmp_path: Path) -> None:
    source = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0, "data_dir": tmp_path / "src"})
    facets = await _facets_after(source, together=False)
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"], facets
    # actual: memories, graph_edges and governance_events differ (the replay left the dark facet current)
    replayed = await replayed_equal(source, tmp_path / "replayed")
    assert _facets(replayed) == facets
