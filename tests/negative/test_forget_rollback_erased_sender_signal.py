"""A rollback of a forget brings back a use signal sent by an agent erased since the forget.

Finding: retention now drops a forgotten memory's use signals (``ShardTx._drop_signals``, from
``delete_memory(redact=False)``), keeping each whole in the audit log for a rollback of the forget. An erasure of
the agent (or session) that sent one of those signals looks for its signals in ``lifecycle_signals`` only
(``ShardTx.erase_records``): the dropped one is not there any more, so it is neither erased nor redacted in the
audit. Rolling the forget back then re-inserts the erased agent's signal (``_restore_signal``) and tallies it
(``tally_again``): the facet counts the erased agent's feedback, and the erased agent's id and session stay in
``lifecycle_signals``. A replay cannot open the erased agent's feedback: its forget drops nothing of it, its
rollback puts nothing back, and the states differ.

Here ``coder`` hears a preference (persona facet F); ``reviewer`` marks F harmful; retention forgets F; agent
``reviewer`` is erased; the forget is rolled back.

Expected: the erasure reaches the signals its agent sent that a forget holds in the audit (redacted or left out
of the rollback), so the restored F counts no harm from ``reviewer``, as the replay's does.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})


async def test_rollback_of_a_forget_does_not_restore_an_erased_agents_signal(settings: Settings,
                                                                            tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    async with store_with(s, [make_turn(1, DARK, session="a")]) as (rt, app):
        (facet,) = app.list_memories(SCOPE, layer="L4")
        mid = str(facet["memory_id"])
        await app.feedback(REVIEWER, [mid], "harmful")
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT agent_id FROM lifecycle_signals WHERE memory_id=?", (mid,)) == [
            {"agent_id": "reviewer"}]
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE memory_id=?", (mid,)) == []  # forgotten
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        (back,) = rows(s.data_dir, "SELECT lc_harmful FROM memories WHERE memory_id=?", (mid,))
        signals = rows(s.data_dir, "SELECT agent_id, kind FROM lifecycle_signals WHERE memory_id=?", (mid,))
    assert signals == [] and back == {"lc_harmful": 0}, ("the erased agent's feedback came back", signals, back)
    await replayed_equal(s, tmp_path / "replayed")
