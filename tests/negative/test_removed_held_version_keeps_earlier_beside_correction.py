"""A persona version that goes (its session erased, its atom rejected, its facet forgotten) while the version before
it was only *held* for review to be replaced by it leaves that earlier version current beside the correction said
after it.

Finding: tea (day 0), coffee (day 1, no correction cue) and "water … instead, actually" (day 2). Without a model,
coffee does not supersede tea: "replace tea by coffee" is held for review (``_version_step``,
altm/pipeline/processors/govern.py:359-376); water, a correction, supersedes coffee. Tea and water are current,
one held action pending. When coffee goes, nothing places water again: the fix of e06777f re-places only the
facets a removal *changed* (``_moved_facet``, govern.py:91-98, taken in ``_proposals``, govern.py:145-146, then
``_replace``, govern.py:218-238): a facet it released from the removed one (``release_superseded``,
altm/store/_tx/_writes.py:222-239) or moved onto a later saying. Here the removal changes neither neighbour:
tea was never superseded by coffee (the held action naming coffee is dropped or left, tea's row is untouched),
and water is the *superseding* side of its pair, which the erasure's scrub and a review's
``_facets_following`` (altm/pipeline/writer/ops/governance.py:228-265) do not touch. So water, the correction
placed right after tea now, never replaces it: the user's profile answers the stale value beside its
correction, for good.

- erasure: ``altm replay`` of the log never opens s1, places water right after tea and supersedes tea: the
  live data dir and its replay differ (``memories``, ``graph_edges``, ``governance_events``);
- review: a reviewer who rejects coffee before water is said leaves water the only current version; rejected
  after, tea and water are both current;
- retention: the pinned tea outlives the forgotten coffee; water, newer and kept, stays beside it.

Reproduction: embedded runtime, no embedder, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each derived before
the next; then ``erase(SCOPE, "session", session_id="s1")``, or ``review_decide(coffee atom, "reject")``; or tea
pinned when said, ``retention_days_l4=30``, water on day 140 and ``admin.retention(T0 + 150 days)``. Read the
current L4 facets (``superseded_by`` NULL, not rejected).

Expected: water is the only current version in each case, as in a store that never held coffee (e.g. a removal
hands govern the version placed right after the removed one too, and govern places it again among the versions
left), and the replay of the erased data dir has the source's state.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, memory_id_of, pending_holds, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.turns import SCOPE, T0

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning."
WATER = "I prefer water in the morning instead, actually."


async def test_erasing_a_version_held_against_the_one_before_leaves_only_the_correction_current(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert current_statements(s.data_dir) == sorted([TEA, WATER]) and pending_holds(s.data_dir) == 1
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    # actual: [TEA, WATER] — water, the correction now placed right after tea, never replaces it
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)
    # actual: memories, graph_edges, governance_events differ (the replay supersedes tea by water)
    await replayed_equal(s, tmp_path / "replayed")


async def test_rejecting_a_version_held_against_the_one_before_leaves_only_the_correction_current(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        await app.review_decide(SCOPE, memory_id_of(s.data_dir, "L2", COFFEE), "reject")
        await rt.run_until_idle()
    # actual: [TEA, WATER]; rejected before water was said, coffee's rejection leaves [WATER]
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)


async def test_retention_forgetting_a_version_held_against_a_pinned_one_leaves_only_the_correction_current(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    async with store_with(s, [said_on(0, TEA)]) as (rt, app):
        await app.feedback(SCOPE, [memory_id_of(s.data_dir, "L4", TEA)], "pin")
        await rt.run_until_idle()
        for turn in (said_on(1, COFFEE), said_on(140, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert current_statements(s.data_dir) == sorted([TEA, WATER])
        assert await app.admin.retention(T0 + timedelta(days=150)) == 1  # the coffee facet (tea pinned, water new)
        await rt.run_until_idle()
    # actual: [TEA, WATER] — the pinned tea stays current though water, the correction after it, is left
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)
