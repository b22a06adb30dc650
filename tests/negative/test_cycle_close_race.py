"""Concurrent closes of one cycle all succeed: a commit and an abort, or two commits with different answers.

What a caller expects (README, runtime protocol): a cycle is committed or aborted, once; a commit of a
committed cycle with other content is an ``IdempotencyConflict`` and an abort of a committed one a
``CycleStateError`` (``ProtocolService.commit_turn`` / ``abort_turn``, altm/app/_protocol.py). Both read the
cycle's state (``self.cycles.find``), then ``await self.publish(...)`` and only then record the new state
(``self.cycles.remember``). In a deployment whose bus suspends on a publish (the Kafka bus awaits the
broker's acknowledgement, altm/bus/kafka/_bus.py ``publish_many``), a second close of the same cycle that
arrives while the first is being published still reads ``prepared`` and goes ahead:

* a commit and an abort at once both succeed. The log holds the assistant turn, its citations and both
  closes; the writer stores the first (``committed``) and refuses the other, while this process remembers
  the last (``aborted``), so ``find_cycle`` says aborted for a cycle the store holds as committed, and a
  retry of the commit is refused as "was aborted".
* two commits with different answers both succeed; the writer keeps one answer (the assistant turns share an
  event id), the other caller was told its answer was committed, and this process now answers a retry of
  the stored answer with ``IdempotencyConflict``.

The embedded bus does not suspend, so the publisher here yields once before it publishes, as the Kafka
producer's ``send`` does.

Expected: one close wins; the other is refused (``CycleStateError`` for an abort of a committed cycle or a
commit of an aborted one, ``IdempotencyConflict`` for a commit with other content), and this process's state
of the cycle is the one the writer stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from altm.app import CommittedTurn, CycleStateError, IdempotencyConflict, MemoryApp, ProtocolError
from altm.core import Event, RuntimeCycle
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]
QUESTION = "When is the billing migration deadline?"


def yielding_publisher(app: MemoryApp) -> None:
    """The protocol's publisher suspends once before it publishes, as a publish to Kafka does."""
    publish = app.protocol.publish

    async def publish_to_a_broker(events: Sequence[Event]) -> None:
        await asyncio.sleep(0)
        await publish(events)

    app.protocol.publish = publish_to_a_broker


def stored_state(settings: Settings, cycle_id: str) -> list[str]:
    return [str(r["state"]) for r in rows(settings.data_dir, "SELECT state FROM runtime_cycles WHERE cycle_id = ?",
                                          (cycle_id,))]


async def test_a_commit_and_an_abort_at_once_close_the_cycle_once(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-q", QUESTION, 800)
        cited = prepared.bundle.memory_ids[:1]
        assert cited, "the bundle recalls the deadline"
        await rt.run_until_idle()
        yielding_publisher(app)
        results = await asyncio.gather(
            app.commit_turn(prepared.cycle_id, "December 15.", cited),
            app.abort_turn(prepared.cycle_id, "the user left"),
            return_exceptions=True)
        await rt.run_until_idle()
        here = app.find_cycle(prepared.cycle_id).state.value
    succeeded = [type(r).__name__ for r in results if isinstance(r, CommittedTurn | RuntimeCycle)]
    refused = [r for r in results if isinstance(r, CycleStateError)]
    assert len(succeeded) == 1 and len(refused) == 1, (
        f"a commit and an abort of one cycle at once: {len(succeeded)} succeeded ({succeeded}); the store holds it "
        f"{stored_state(s, prepared.cycle_id)}, this process says {here!r}")


async def test_two_commits_with_different_answers_at_once_are_one_commit_and_one_conflict(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-q", QUESTION, 800)
        await rt.run_until_idle()
        yielding_publisher(app)
        results = await asyncio.gather(
            app.commit_turn(prepared.cycle_id, "December 15."),
            app.commit_turn(prepared.cycle_id, "I do not know the deadline."),
            return_exceptions=True)
        await rt.run_until_idle()
        answers = [str(r["content"]) for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer = 'L0' "
                                                        "AND role = 'assistant' AND session_id = 's1'")]
        retries: list[str] = []
        for text in ("December 15.", "I do not know the deadline."):
            try:
                retries.append(f"{text!r}: replayed={(await app.commit_turn(prepared.cycle_id, text)).replayed}")
            except ProtocolError as exc:
                retries.append(f"{text!r}: {type(exc).__name__}")
    committed = [r for r in results if isinstance(r, CommittedTurn)]
    refused = [r for r in results if isinstance(r, IdempotencyConflict)]
    assert len(committed) == 1 and len(refused) == 1, (
        f"two commits of one cycle with different answers at once: {len(committed)} committed, {len(refused)} "
        f"refused; the store holds the answer(s) {answers}; each retried afterwards: {retries}")
