"""Two cycles of one turn committed at once with different replies both answer "committed"; one reply is lost.

Finding: ``ProtocolService.commit_turn`` (altm/app/_protocol.py:298-301) serialises commits by *cycle* only
(``self._one_at_a_time(cycle_id)``), while the check added in 01ec621 that a turn has one reply
(``self._turn_unused(reply, ...)``, altm/app/_protocol.py:316) is per *turn*: it looks at what this process said
(``self._turns``, filled by ``self._said(reply)`` only after ``await self.publish(events)``, line 334) and at the
stored assistant message (not there until the writer applies it). Two cycles of one turn (a host's "regenerate"
prepared under a second idempotency key, which ``prepare_turn`` allows for the same question) committed at once on
a bus whose publish suspends (Kafka awaits the broker's acknowledgement) both pass the check before either has
published; both are told "committed", and the writer keeps one reply and refuses the other (an L0 row is
append-only). ``prepare_turn`` takes a lock on the turn (``f"turn:{scope}/{session}/{turn}"``) for exactly this
reason; ``commit_turn`` does not.

Reproduction: prepare turn s2/t1 under keys k1 and k2 (same question, two cycles); with a publisher that yields
once before it publishes (as ``test_cycle_close_race.py`` does for the Kafka producer), commit k1's cycle with
"December 15." and k2's with another reply at once (``asyncio.gather``); run the pipeline.

Expected: one commit succeeds and the other is refused with ``IdempotencyConflict`` (409), as it is when the two
commits come one after the other; never two "committed" answers for a turn the writer stores one reply of.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from altm.app import CommittedTurn, IdempotencyConflict, MemoryApp
from altm.core import Event
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]
QUESTION = "When is the billing migration deadline?"
REPLIES = ("December 15.", "It is December 15 (regenerated answer).")


def yielding_publisher(app: MemoryApp) -> None:
    """The protocol's publisher suspends once before it publishes, as a publish to Kafka does."""
    publish = app.protocol.publish

    async def publish_to_a_broker(events: Sequence[Event]) -> None:
        await asyncio.sleep(0)
        await publish(events)

    app.protocol.publish = publish_to_a_broker


async def test_two_replies_to_one_turn_at_once_are_one_commit_and_one_conflict(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        first = await app.prepare_turn(SCOPE, "s2", "t1", QUESTION, 800, idempotency_key="k1")
        second = await app.prepare_turn(SCOPE, "s2", "t1", QUESTION, 800, idempotency_key="k2")
        assert first.cycle_id != second.cycle_id
        await rt.run_until_idle()
        yielding_publisher(app)
        results = await asyncio.gather(
            app.commit_turn(first.cycle_id, REPLIES[0]),
            app.commit_turn(second.cycle_id, REPLIES[1]),
            return_exceptions=True)
        await rt.run_until_idle()
        stored = [str(r["content"]) for r in rows(
            s.data_dir, "SELECT content FROM memories WHERE layer = 'L0' AND role = 'assistant' AND session_id = 's2'",
            ())]
    committed = [r for r in results if isinstance(r, CommittedTurn)]
    refused = [r for r in results if isinstance(r, IdempotencyConflict)]
    assert len(committed) == 1 and len(refused) == 1, (
        f"two replies to turn t1 committed at once: {len(committed)} committed, {len(refused)} refused "
        f"({[type(r).__name__ for r in results]}); the store holds the reply/replies {stored}")
