"""Found by the randomized replay check (seed 60): a cycle of one session (or agent) recalls a memory of
another, and its bundle counts as a use of that memory (an ``injected`` signal, with cited and feedback
signals at commit). Erasing the cycle's session or agent erased the cycle, but the signals it sent stayed
counted on the memory that was kept (its counters and weight), while a replay, which cannot open the erased
session's control records, never counted them. An erasure of the cycle's owner takes its signals back."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.app import Feedback
from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "I prefer small pull requests under 300 lines."  # an atom, and the user's L4 facet (any agent recalls it)
SIGNALS = "SELECT memory_id, signal_id, kind FROM lifecycle_signals ORDER BY memory_id, signal_id, kind"
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})  # another agent of the same user
USE = "SELECT memory_id, lc_injected, lc_cited, lc_helpful, lc_weight, lc_state FROM memories ORDER BY memory_id"


@pytest.mark.parametrize("erased", ["session", "agent"])
async def test_erasing_a_cycles_session_takes_back_the_signals_it_sent(settings: Settings, tmp_path: Path,
                                                                      erased: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, SAID, session="s1")]) as (rt, app):
        before = rows(s.data_dir, USE)
        asker = SCOPE if erased == "session" else REVIEWER
        prepared = await app.prepare_turn(asker, "s2", "s2-t1", "How big should my pull requests be?", 800)
        shown = [item.memory_id for item in prepared.bundle.items]
        assert shown  # the cycle recalled memories of session s1 (of the other agent: the user's facet)
        await app.commit_turn(prepared.cycle_id, "Noted.", shown[:1])
        await rt.run_until_idle()
        assert rows(s.data_dir, USE) != before  # counted as used
        if erased == "session":
            await app.erase(SCOPE, "session", session_id="s2")
        else:
            await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
    assert rows(s.data_dir, SIGNALS) == []
    assert rows(s.data_dir, USE) == before
    await replayed_equal(s, tmp_path / "replayed")


async def test_erasing_an_agent_takes_back_its_feedback_outside_a_session(settings: Settings, tmp_path: Path) -> None:
    """Feedback sent outside any cycle (a helpful mark) is sealed under its agent's key: an erasure of that agent
    takes it back too. A pin is the user's curation (an L4 facet is pinned with a user key, from whichever agent's
    scope): it stays (``test_user_pin_outlives_agent_erasure.py``)."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, SAID, session="s1")]) as (rt, app):
        before = rows(s.data_dir, USE)
        (facet,) = [r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L4'")]
        await app.feedback(REVIEWER, [facet], "pin")
        await app.feedback(REVIEWER, [facet], "helpful")
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT lc_pinned, lc_helpful FROM memories WHERE memory_id=?", (facet,)) == [
            {"lc_pinned": 1, "lc_helpful": 1}]
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
    assert [r["kind"] for r in rows(s.data_dir, SIGNALS)] == ["pin"]
    assert rows(s.data_dir, "SELECT lc_pinned, lc_helpful FROM memories WHERE memory_id=?", (facet,)) == [
        {"lc_pinned": 1, "lc_helpful": 0}]
    assert [r for r in rows(s.data_dir, USE) if r["memory_id"] != facet] == [
        r for r in before if r["memory_id"] != facet]
    await replayed_equal(s, tmp_path / "replayed")


@pytest.mark.parametrize("rolled_back", [False, True])
async def test_a_promotion_the_erased_cycle_made_goes_with_its_signals(settings: Settings, tmp_path: Path,
                                                                      rolled_back: bool) -> None:
    """Found by the randomized check (seed 60): a cycle's citation and helpful mark promoted the memory (a
    governance decision); erasing the cycle's session took the signals back but kept the promotion's record.
    Rolled back before the erasure (the helpful signal with it), the promotion's record and the rollback's
    stayed, and a replay, which never made the promotion, refused the rollback ("no governance decision")."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, SAID, session="s1")]) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s2", "s2-t1", "How big should my pull requests be?", 800)
        shown = [item.memory_id for item in prepared.bundle.items]
        await app.commit_turn(prepared.cycle_id, "Noted.", shown[:1], Feedback(helpful=shown[:1]))
        await rt.run_until_idle()
        decisions = "SELECT decision, step FROM governance_events WHERE decision IN ('promote', 'demote')"
        assert rows(s.data_dir, decisions), rows(s.data_dir, USE)  # the memory was promoted
        if rolled_back:
            (promotion,) = {r["decision_id"] for r in rows(s.data_dir, "SELECT decision_id FROM governance_events")}
            await app.rollback(SCOPE, promotion, "not that one")
            await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT decision, step FROM governance_events") == []
    target = await replayed_equal(s, tmp_path / "replayed")
    assert rows(target, "SELECT reason FROM rejections") == []
