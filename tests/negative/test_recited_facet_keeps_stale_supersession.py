"""A facet whose first saying goes (its session erased, its atom rejected) moves onto a later saying of the same
statement but keeps the supersession made when it was placed first: a version said *before* it stays its
replacement, and its validity ends before it begins.

Finding: tea (day 0, agent coder, session s0), "coffee … now, actually" (day 1, s1), tea again (day 2, agent
reviewer of the same user, s2). Placed at its first saying, tea is superseded by coffee; the day-2 repeat is the
same version (README: "a repeat of an old version no longer counts as the latest"): coffee alone is current.
When the day-0 saying goes, the facet is kept on the day-2 atom (``facet_recited``,
altm/pipeline/writer/ops/memory.py:339-350, from an erasure's ``_facets_kept``,
altm/pipeline/writer/ops/erasure.py:113-124, or a review's ``_facets_following``,
altm/pipeline/writer/ops/governance.py:236-239): its valid time moves to day 2, but ``carry_over`` with
``_KEPT_ON_UPDATE`` (memory.py:37-41) keeps ``superseded_by`` = coffee and ``valid_to`` = day 1. Nothing places the
version again: govern takes L2 atom changes only (altm/pipeline/processors/govern.py:93-98), and the facet is
now placed after coffee. A store that never had the day-0 saying places tea (day 2, no correction cue) after
coffee and holds "coffee replaced by tea" for review: both current, a pending held action.

- erasure: ``altm replay`` of the log (which never opens s0) gives that state: ``memories``, ``graph_edges``,
  ``governance_events`` and ``held_actions`` differ from the live data dir's (state hash differs);
- review: a reviewer who rejects the day-0 atom before coffee and the repeat are said gets both current and the
  held action; rejected after, coffee alone stays current: the state depends on when the queue was read.

Reproduction: embedded runtime, no embedder, turns delivered one at a time (``said_on``); then
``erase(SCOPE, "session", session_id="s0")``, or ``review_decide(day-0 tea atom, "reject")``; read the current
L4 facets (``superseded_by`` NULL, not rejected), ``held_actions`` and each facet's valid interval.

Expected: as a store that never had the day-0 saying: tea and coffee current, "coffee replaced by tea" held for
review, no facet valid until before it is valid from; the replay of the erased data dir equals it (e.g. a facet
re-cited onto a later atom is released from a version placed before its new first saying, and govern places it
again).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, inverted_facets, pending_holds, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})


async def test_erasing_the_first_saying_of_a_repeated_version_gives_the_state_of_its_replay(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, TEA, REVIEWER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert current_statements(s.data_dir) == [COFFEE]
        await app.erase(SCOPE, "session", session_id="s0")
        await rt.run_until_idle()
    # actual: [{tea, valid_from day 2, valid_to day 1}] — still superseded by coffee, said the day before it
    assert inverted_facets(s.data_dir) == [], inverted_facets(s.data_dir)
    assert current_statements(s.data_dir) == sorted([COFFEE, TEA]), current_statements(s.data_dir)
    # actual: governance_events, graph_edges, held_actions and memories differ
    await replayed_equal(s, tmp_path / "replayed")


async def _rejected_first_saying(settings: Settings, *, early: bool) -> tuple[list[str], int]:
    def day0_atom() -> str:
        return str(rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's0'")
                   [0]["memory_id"])

    async with store_with(settings, [said_on(0, TEA)]) as (rt, app):
        if early:
            await app.review_decide(SCOPE, day0_atom(), "reject")
            await rt.run_until_idle()
        for turn in (said_on(1, COFFEE), said_on(2, TEA, REVIEWER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        if not early:
            await app.review_decide(SCOPE, day0_atom(), "reject")
            await rt.run_until_idle()
    return current_statements(settings.data_dir), pending_holds(settings.data_dir)


async def test_rejecting_the_first_saying_of_a_repeated_version_ends_as_rejecting_it_first(
        settings: Settings, tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none"})
    first = await _rejected_first_saying(base.model_copy(update={"data_dir": tmp_path / "early"}), early=True)
    assert first == (sorted([COFFEE, TEA]), 1), first
    last = await _rejected_first_saying(base.model_copy(update={"data_dir": tmp_path / "late"}), early=False)
    # actual: ([COFFEE], 0) — the repeat stays superseded by coffee, said before it
    assert last == first, last
