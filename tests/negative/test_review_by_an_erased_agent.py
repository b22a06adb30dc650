"""A reviewer's rejection of one agent's memory, decided from a sibling agent's scope, is lost to a replay once
that sibling agent is erased.

The review queue is the user's (README: a user key may use "the review queue and its decisions" for "every agent
of the users it covers"; ``GET /v1/review`` lists every agent's items whatever agent scope it is asked from).
An operator with a user key looks at the queue from the ``writer`` agent's scope and rejects the ``coder``
agent's atom "The billing service runs on db-77 in Dublin." (``POST /v1/review`` with the writer's scope and the
coder's memory id). The writer applies it: the coder's atom is ``rejected`` by the reviewer (ground truth).

Later the writer agent is erased. The source keeps the rejection of the coder's atom (it is the coder's
memory, which the erasure does not touch). But the review's control event was sealed under the *writer's* data
key (``owner_of``, altm/bus/sealing/_sealer.py:108-132: only a rollback counts as the user's decision,
``_is_users_decision`` at :98-105), which the erasure destroys: a replay cannot open it, never applies it,
and the coder's atom comes back ``active``/``unverifiable`` in the restored store, back in recall.

What a user expects: "A decision is a control event on the log, applied by the writer, so a replay reproduces
it" (README, Review queue), and "Replaying the log ... does not bring the content back" / the replay's state
equals the source's. The README already says so for the rollback case: "a rollback request and its proposal are
sealed under the user's key (whichever agent asked), so erasing that agent or session keeps a rollback of other
agents' memories" (``test_rollback_by_an_erased_agent.py``). A review decision carries ids and a note, no memory
content, exactly like a rollback request.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
SAID = "The billing service runs on db-77 in Dublin."


async def test_a_rejection_decided_from_an_agent_erased_later_replays_to_the_same_state(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, SAID, session="a1"), make_turn(2, "The release is on Friday.", scope=WRITER, session="b1")]
    async with store_with(s, turns) as (rt, app):
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND agent_id='coder' "
                                   "AND content=?", (SAID,))
        queue = app.review_queue(WRITER)  # the user's queue, asked from the writer's scope
        assert queue is not None
        await app.review_decide(WRITER, atom["memory_id"], "reject", note="wrong host")
        await rt.run_until_idle()
        await app.erase(WRITER, "agent")
        await rt.run_until_idle()
    (kept,) = rows(s.data_dir, "SELECT lc_state, trust_method FROM memories WHERE memory_id=?", (atom["memory_id"],))
    assert (kept["lc_state"], kept["trust_method"]) == ("rejected", "ground_truth")  # the coder's atom stays rejected
    target = await replayed_equal(s, tmp_path / "replayed")
    assert rows(target, "SELECT lc_state FROM memories WHERE memory_id=?", (atom["memory_id"],)) == [
        {"lc_state": "rejected"}]
