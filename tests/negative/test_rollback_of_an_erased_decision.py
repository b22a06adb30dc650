"""Found by the randomized replay check (seeds 50, 65, 148, 152 of 200): the same statement in two sessions is
merged (a governance decision naming both atoms), an operator rolls the merge back, then both sessions are
erased. The source's erasure drops the merge's record and the rollback's with it (they name erased memories).
A replay cannot open the erased sessions, so it never derives the atoms nor meets the merge, and it refused
the rollback ("no governance decision …"): a rejection row the source does not have. The rollback now carries
the memories the decision names (as the operator's request read them), and a replay voids the rollback of a
decision it never met when an erasure later in the log buries one of them: that erasure removes every trace of
the rollback in the source."""

from __future__ import annotations

from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0


def _turn(i: int, text: str, session: str) -> TurnEvent:
    return TurnEvent(scope=SCOPE, session_id=session, turn_id=f"{session}-t{i}", role=Role.USER, content=text,
                     timestamp=T0)


async def test_a_rollback_of_a_merge_whose_sessions_are_erased_later_replays_to_the_same_state(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [_turn(1, "The release is on Friday.", "s3"), _turn(2, "The release is on Friday.", "s2"),
             _turn(3, "I prefer dark mode in every editor.", "s1")]
    async with store_with(s, turns) as (rt, app):
        (merge,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "merge"}
        await app.rollback(SCOPE, merge, "keep both")
        await rt.run_until_idle()
        assert {e["step"] for e in app.governance_events(SCOPE) if e["decision_id"] == merge} >= {"rolled_back"}
        for session in ("s2", "s3"):
            await app.erase(SCOPE, "session", session_id=session)
            await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM governance_events WHERE decision IN ('merge', 'rollback')") == []
    assert rows(s.data_dir, "SELECT 1 FROM rejections") == []
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE session_id='s1'") != []
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_rollback_of_a_decision_nobody_made_is_still_refused_in_a_replay(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [_turn(1, "The release is on Friday.", "s1")]) as (rt, app):
        await app.rollback(SCOPE, "prop_00000000000000000000000000000000", "typo")
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    (refused,) = rows(s.data_dir, "SELECT reason FROM rejections")
    assert "no governance decision" in refused["reason"]
    await replayed_equal(s, tmp_path / "replayed")
