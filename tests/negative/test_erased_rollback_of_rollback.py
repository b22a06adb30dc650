"""Found by the randomized replay check (seed 646, when the rollbacks' time-derived ids sorted one way): a
rollback of a rollback outlived an erasure that took the decision both undid.

History: govern merges two of the reviewer agent's memories (decision M); an operator rolls the merge back (R1),
then rolls that rollback back (R2); the reviewer agent is erased. The erasure takes the records of the decisions
that name its memories (M) and of their rollbacks (R1), but R2's record names only R1 (``{"decision":
"rollback", "decision_id": R1}``), so it stayed. The replay cannot open M (sealed under the reviewer's destroyed
key): R1 is void there, as a rollback of a decision that stood on memories an erasure later removes, but R2,
which named no memory, was refused ("no governance decision R1") and filed as a pending rejection.

Now an erasure takes the rollbacks of what it takes however deep, and a rollback of a rollback names the
memories of the decision the first one undid, so the replay takes it as void too.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.scenarios import OLD, first_turns
from tests.support.turns import SCOPE

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
MORE = [(REVIEWER, "s2", "We decided to deploy the billing service on Tuesdays."),
        (SCOPE, "s3", "Never use pickle for the session cache, it broke the last release."),
        (REVIEWER, "s1", "The release is on Friday.")]


async def test_an_erasure_takes_a_rollback_of_a_rollback_of_what_it_erases(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": False})
    async with store_with(s, first_turns(646)) as (rt, app):
        await rt.publish([TurnEvent(scope=scope, session_id=session, turn_id=f"{session}-t{100 + k}", role=Role.USER,
                                    content=said, timestamp=OLD + timedelta(minutes=100 + k))
                          for k, (scope, session, said) in enumerate(MORE)])
        await rt.run_until_idle()
        merges = sorted({str(e["decision_id"]) for e in app.governance_events(SCOPE) if e["decision"] == "merge"})
        assert merges  # the reviewer's duplicates were merged
        await app.rollback(SCOPE, merges[0], "undo the merge")
        await rt.run_until_idle()
        await app.erase(REVIEWER, "session", session_id="s1")
        await rt.run_until_idle()
        (first,) = {str(e["decision_id"]) for e in app.governance_events(SCOPE) if e["decision"] == "rollback"}
        await app.rollback(SCOPE, first, "undo the undo")
        await rt.run_until_idle()
        assert len({str(e["decision_id"]) for e in app.governance_events(SCOPE) if e["decision"] == "rollback"}) == 2
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT decision_id FROM governance_events WHERE decision='rollback'") == []
    await replayed_equal(s, tmp_path / "replayed")
