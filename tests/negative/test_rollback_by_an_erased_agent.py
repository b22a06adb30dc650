"""Found by the randomized replay check (seed 83): a rollback is a decision about the user's memories (the
governance record is the user's, whichever agent's scope the operator asked from). An operator rolled back a
merge of the coder's atoms from the reviewer's scope, then the reviewer agent was erased. The source keeps the
rollback's effect (the coder's atoms unmerged) and its record; a replay could not open the rollback request
(sealed under the reviewer's destroyed data key), so the merge stood. A rollback request carries ids and a
reason, no memory content: it is sealed under the user's key, which only an erasure of the user destroys."""

from __future__ import annotations

from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})


def _turn(i: int, text: str, session: str) -> TurnEvent:
    return TurnEvent(scope=SCOPE, session_id=session, turn_id=f"{session}-t{i}", role=Role.USER, content=text,
                     timestamp=T0)


async def test_a_rollback_asked_from_an_agent_erased_later_replays_to_the_same_state(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [_turn(1, "My favourite coffee is a flat white from the corner shop.", "s1"),
             _turn(2, "My favourite coffee is a flat white from the corner shop.", "s2"),
             TurnEvent(scope=REVIEWER, session_id="s1", turn_id="r1", role=Role.USER,
                       content="The release is on Friday.", timestamp=T0)]
    async with store_with(s, turns) as (rt, app):
        (merge,) = {e["decision_id"] for e in app.governance_events(REVIEWER) if e["decision"] == "merge"}
        await app.rollback(REVIEWER, merge, "keep both")
        await rt.run_until_idle()
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE agent_id='reviewer'") == []
    assert {r["step"] for r in rows(s.data_dir, "SELECT step FROM governance_events WHERE decision_id=?",
                                    (merge,))} >= {"rolled_back"}
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE agent_id=? AND superseded_by IS NOT NULL",
                (SCOPE.agent_id,)) == []  # the merge stays undone
    await replayed_equal(s, tmp_path / "replayed")
