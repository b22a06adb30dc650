"""A rollback of a demotion's rollback ends in an internal error instead of an undo or a deliberate refusal.

Every rollback is itself recorded as a governance decision (``rollback``, step ``applied``) and is listed by
``altm governance list`` next to the decisions it undid, so an operator who rolled back the wrong demotion asks to
roll that rollback back. The writer then restores the rollback's own audit rows; one of them is the deletion of the
demotion's use signal (table ``lifecycle_signals``, old value = the signal, new value = none), which
``ShardTx.restore`` does not handle: it raises ``ShardError("cannot roll back a change to lifecycle_signals")``. The
writer logs a traceback ("the writer could not apply ...") and records the request as a rejected proposal whose
reason is that internal exception; it lands in the user's review queue as a rejected proposal to approve or
dismiss. A rollback of a rollback of a decision that changed memories alone goes through, so whether an undo can
be undone depends on which tables the first decision touched.

Expected: either the undo is undone (the harm signal back, the memory demoted again, as the audit row says it was),
or the writer refuses the request on purpose with a reason that says a rollback cannot be rolled back — not an
internal exception.
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

PREFERENCE = "I prefer tabs over spaces in Python code."


async def test_rolling_back_a_demotions_rollback_is_an_undo_or_a_deliberate_refusal(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, PREFERENCE)]) as (rt, app):
        (atom,) = [m for m in app.list_memories(SCOPE, layer="L2") if m["content"] == PREFERENCE]
        mid = str(atom["memory_id"])
        await app.feedback(SCOPE, [mid], "harmful")
        await rt.run_until_idle()
        (demotion,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "demote"}
        await app.rollback(SCOPE, str(demotion))
        await rt.run_until_idle()
        (undo,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "rollback"}
        request = await app.admin.rollback(SCOPE, str(undo), "the demotion was right after all")
        await rt.run_until_idle()
        outcome = app.admin.outcome(request)
        (row,) = rows(s.data_dir, "SELECT lc_state, lc_harmful FROM memories WHERE memory_id=?", (mid,))
    if outcome.status == "applied":
        assert (row["lc_state"], row["lc_harmful"]) == ("demoted", 1), dict(row)
        return
    assert outcome.status == "rejected", outcome
    assert "could not be applied" not in str(outcome.reason) and "Error" not in str(outcome.reason), (
        "the rollback of a rollback failed with an internal exception", outcome.reason)
