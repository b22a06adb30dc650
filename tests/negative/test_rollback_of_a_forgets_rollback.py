"""Rolling back a forget's rollback ends in an internal KeyError when the forget left tombstones.

README (today, 538ae95): "a rollback of that rollback counts it again (`test_rollback_of_a_rollback.py`; the
decision it re-applies stays recorded as rolled back …)": an operator may undo an undo. With
``ALTM_RETENTION_TOMBSTONES`` a forget leaves tombstones of what it forgot, and its rollback removes them
(``ShardTx.unbury_forgotten``), audited under the rollback's proposal id with a *partial* old value
(``{"memory_id", "reason"}``, no ``tombstone_id`` nor hashes). Rolling that rollback back restores its audit rows
through the generic ``_KEYS`` path (``tombstones`` is in ``ShardTx._KEYS``), which writes the partial image
back as a tombstone row: ``KeyError: 'tombstone_id'``. The writer records the operator's request as a rejected
proposal whose reason is the internal exception ("the proposal could not be applied: KeyError: …"), and it
lands in the review queue.

(Present at 9e08b93 too; found while attacking today's rollback-of-a-rollback support, which covers signals
only.)

Expected, as ``test_rollback_of_a_rollback.py`` asks for a demotion: either the undo is undone (the message,
its atom and capsule forgotten again, their tombstones back) or a deliberate refusal that says why — never an
internal exception.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

OLD = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def test_rolling_back_a_forgets_rollback_is_an_undo_or_a_deliberate_refusal(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retention_tombstones": True})
    said = TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-t1", role=Role.USER, timestamp=OLD,
                     content="We decided to deploy the billing service on Tuesdays.")
    async with store_with(s, [said]) as (rt, app):
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        (forget,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, str(forget), "too eager")
        await rt.run_until_idle()
        (undo,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "rollback"}
        request = await app.admin.rollback(SCOPE, str(undo), "the forget was right after all")
        await rt.run_until_idle()
        outcome = app.admin.outcome(request)
        left = rows(s.data_dir, "SELECT layer FROM memories WHERE layer IN ('L0', 'L2')")
    if outcome.status == "applied":
        assert left == [], ("the forget re-applied, but its memories are still stored", left)
        return
    assert outcome.status == "rejected", outcome
    assert "could not be applied" not in str(outcome.reason) and "Error" not in str(outcome.reason), (
        "the rollback of a forget's rollback failed with an internal exception", outcome.reason)
