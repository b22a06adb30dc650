"""A cycle closed on the log, but not yet stored by the writer, can be closed again by another process.

What a caller expects (README, runtime protocol): a committed cycle is committed once; a commit with other
content is an ``IdempotencyConflict`` and an abort of it a ``CycleStateError``. ``ProtocolService.commit_turn``
and ``abort_turn`` (altm/app/_protocol.py) decide from ``CycleBook.get`` (altm/app/_cycles.py): the cycles this
process touched and the state the writer has stored. A close that is on the log but not applied yet (the
process restarted after answering the commit; another ``altm serve`` behind the same load balancer answered
it; the Kafka workers lag) is in neither, so the cycle still reads ``prepared``: a second commit with another
answer, or an abort, is published and acknowledged. The writer then stores the first close, refuses the
second (``record_cycle``: "already committed") and keeps the first answer (the assistant turns share an event
id): the second caller was told its answer was committed, or its abort done, and neither is true.

Expected: a close of a cycle whose close is already on the log is refused as it is once the writer stored it
(``IdempotencyConflict`` for other content, ``CycleStateError`` for an abort of a committed cycle).
"""

from __future__ import annotations

import pytest

from altm.app import CycleStateError, IdempotencyConflict, ProtocolError
from altm.core.settings import Settings
from tests.support.memories import embedded, runtime_of, store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]


async def committed_then_restarted(s: Settings) -> str:
    """A cycle prepared and stored, then committed ("December 15.") just before the process stopped."""
    async with store_with(s, HISTORY) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-q", "When is the billing migration deadline?", 800)
        await rt.run_until_idle()
        await app.commit_turn(prepared.cycle_id, "December 15.")  # on the log; the writer has not applied it
    return prepared.cycle_id


@pytest.mark.xfail(strict=True, reason=(
    "known limit: a close is decided by what this process remembers and what the writer stored; one that is only "
    "on the log (another process answered it, or this one restarted before the writer applied it) is not seen. "
    "Refusing it would need the caller to wait for the writer's outcome (as an erasure request can), a latency "
    "the protocol does not pay today; the writer keeps the first close"))
@pytest.mark.parametrize("second", ["a commit with another answer", "an abort"])
async def test_a_second_close_after_a_restart_is_refused(settings: Settings, second: str) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    cycle_id = await committed_then_restarted(s)
    async with embedded(s) as deployment:
        app = deployment.app
        outcome: str
        try:
            if second == "an abort":
                await app.abort_turn(cycle_id, "the user left")
            else:
                await app.commit_turn(cycle_id, "I do not know the deadline.")
            outcome = "accepted"
        except ProtocolError as exc:
            outcome = type(exc).__name__
        await runtime_of(deployment).run_until_idle()
    state = [str(r["state"]) for r in rows(s.data_dir, "SELECT state FROM runtime_cycles WHERE cycle_id = ?",
                                           (cycle_id,))]
    answers = [str(r["content"]) for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer = 'L0' AND "
                                                           "role = 'assistant' AND session_id = 's1'")]
    expected = CycleStateError.__name__ if second == "an abort" else IdempotencyConflict.__name__
    assert outcome == expected, (
        f"{second} of a cycle committed on the log before a restart was {outcome}; the store then holds the "
        f"cycle {state} with the answer(s) {answers}")
