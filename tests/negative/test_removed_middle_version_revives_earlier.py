"""A persona version between two others that goes (its session erased, its atom rejected by a reviewer, its facet
forgotten by retention) makes the version before it current again beside the version after it.

Finding: tea (day 0), "coffee … now, actually" (day 1) and "water … instead, actually" (day 2) chain as tea →
coffee → water: only water is current. When the coffee facet goes, the writer releases every memory it
superseded (``ShardTx.release_superseded``, altm/store/_tx/_writes.py:222-239: the row as it was before that
supersession, from its audit), called by an erasure's scrub (altm/store/_tx/_erasure.py:241), a retention forget
(``_release``, altm/pipeline/writer/ops/lifecycle.py:166-176) and a reviewer's rejection of the coffee atom
(``_facets_following``, altm/pipeline/writer/ops/governance.py:246-249). It never looks at what superseded the
removed version: water stays current, and tea is current again beside it. Nothing governs the released facet
again (govern takes L2 atoms only, altm/pipeline/processors/govern.py:93-98), so the user's profile answers
both the stale value and its correction, for good.

- erasure: a replay of the log never opens the erased session, places water right after tea and supersedes tea:
  the live data dir and its replay differ (``memories``, ``graph_edges``, ``governance_events``), so
  ``altm replay`` / the restore check fails for an ordinary erasure;
- review: a reviewer who rejects coffee *before* water is said leaves water the only current version
  (``test_rejected_correction_then_another.py``); rejected after, tea and water are both current: the state
  depends on when the reviewer read the queue;
- retention: the README says "a pinned older version is current again once nothing newer is left"; here water
  is newer and left, yet the pinned tea is current again beside it.

Reproduction: embedded runtime, no embedder, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each derived before
the next. Then ``erase(SCOPE, "session", session_id="s1")``; or ``review_decide(coffee atom, "reject")``; or tea
pinned when said, ``retention_days_l4=30``, water on day 140 and ``admin.retention(T0 + 150 days)`` (coffee
forgotten, water kept). Read the current L4 facets (``superseded_by`` NULL, not rejected).

Expected: water is the only current version in each case (the released tea is superseded by the version that
superseded what it was released from, or govern places it again from the atoms left), and the replay of the
erased data dir has its state.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, memory_id_of, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.turns import SCOPE, T0

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning instead, actually."


async def test_erasing_the_session_of_a_middle_version_leaves_only_the_latest_current(settings: Settings,
                                                                                      tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert current_statements(s.data_dir) == [WATER]
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    # actual: [TEA, WATER] — the erasure released tea from coffee although water had superseded coffee
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)
    # actual: memories, graph_edges, governance_events differ (the replay supersedes tea by water)
    await replayed_equal(s, tmp_path / "replayed")


async def test_rejecting_a_middle_version_after_the_next_one_leaves_only_the_latest_current(
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


async def test_retention_forgetting_a_middle_version_keeps_a_pinned_older_one_superseded(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    async with store_with(s, [said_on(0, TEA)]) as (rt, app):
        await app.feedback(SCOPE, [memory_id_of(s.data_dir, "L4", TEA)], "pin")
        await rt.run_until_idle()
        for turn in (said_on(1, COFFEE), said_on(140, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        assert current_statements(s.data_dir) == [WATER]
        assert await app.admin.retention(T0 + timedelta(days=150)) == 1  # the coffee facet (tea pinned, water new)
        await rt.run_until_idle()
    # actual: [TEA, WATER] — the pinned tea is current again though water, newer, is left
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)
