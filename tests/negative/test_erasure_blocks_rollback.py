"""An erasure that clears a verdict redacts *every* audit row of the memory it cleared, so a later rollback of an
unrelated, earlier decision on that memory is refused with "touched erased content".

"Our deploy day is Tuesday." (M) is marked harmful: the lifecycle demotes it (a decision, audited with M's row,
which at that time held nothing of anything erased later). The user then says "Actually, the deploy day is
Thursday now." in another session: verify marks M contradicted, naming it and quoting "thursday". The user
erases that session. ``_verdicts_kept`` clears M's verdict and calls ``redact_audit`` for M, which redacts all of
M's audit rows, the demotion's included. An operator then rolls the demotion back ("too eager"): the writer
refuses it ("touched erased content; erasure cannot be undone"), and M stays demoted for good, though the
demotion's audit never held a byte of the erased session. Only the audit rows whose values quote the erased
content (the verdict that named it) need redacting.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = "SELECT memory_id, trust_status, lc_state FROM memories WHERE layer='L2' AND content=?"
SAID = "Our deploy day is Tuesday."


async def test_an_erasure_does_not_block_the_rollback_of_an_unrelated_earlier_decision(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        (m,) = rows(s.data_dir, _SQL, (SAID,))
        await app.feedback(SCOPE, [m["memory_id"]], "harmful")  # demoted: a decision
        await rt.run_until_idle()
        (demotion,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "demote"}
        await rt.publish([make_turn(2, "Actually, the deploy day is Thursday now.", session="s2")])
        await rt.run_until_idle()
        (contradicted,) = rows(s.data_dir, _SQL, (SAID,))
        assert (contradicted["trust_status"], contradicted["lc_state"]) == ("contradicted", "demoted")
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        await app.rollback(SCOPE, demotion, "too eager")
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, _SQL, (SAID,))
        refused = rows(s.data_dir, "SELECT reason FROM rejections")
    assert refused == [], refused
    assert after["lc_state"] == "active", after
    await replayed_equal(s, tmp_path / "replayed")
