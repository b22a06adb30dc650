"""One record too large for Kafka stops the host SDK's delivery forever (against a real broker).

Finding: ``HostProducer.publish_many`` (altm/interfaces/sdk/_producer.py:87-91) commits any event to its
outbox, whatever the size of its record. Delivery sends the outbox oldest first (``_run``/``_send``,
altm/interfaces/sdk/_producer.py:134-160); ``AIOKafkaProducer.send`` refuses a record larger than the
producer's ``max_request_size`` (1 MiB, also the broker's default ``message.max.bytes``) with
``MessageSizeTooLargeError``. That is a ``KafkaError``, which ``_run`` (altm/interfaces/sdk/_producer.py:139-143)
takes for "broker unavailable": it logs, closes the producer, sleeps and sends the same oldest record again,
forever. Every event published after it, for every user (turns, erasure requests), stays in the outbox and is
never delivered, while ``publish`` keeps returning and the log only says the broker is unavailable. A
deployment that accepts large turns (``ALTM_MAX_CONTENT_BYTES`` raised near or above 1 MiB: the record is the
JSON-escaped content plus up to 16 KiB of metadata) meets this with one long message (a broker whose
``message.max.bytes`` is lowered refuses with ``RecordTooLargeError``, a ``KafkaError`` too).

Reproduction: ``Settings(max_content_bytes=4 MiB)``; publish a turn with 2 MiB of content (within the
deployment's limit), then a small turn of another user; ``flush(timeout_s=10)``.

Expected: a record that can never be delivered does not hold back the others: either ``publish`` refuses it
up front with a ``ValueError`` saying it is too large for the broker (nothing added to the outbox), or the SDK
sets it aside (reports it, e.g. dead-letters it) and goes on; the small turn is delivered and ``flush``
returns within its timeout.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import pytest

from altm.bus.kafka import KafkaBus
from altm.core import Scope, Topic, all_topic_specs, decode_event, topic_name
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.turns import make_turn

pytestmark = pytest.mark.kafka

ANN = Scope(tenant_id="t", workspace_id="w", user_id="ann", agent_id="a")
BOB = Scope(tenant_id="t", workspace_id="w", user_id="bob", agent_id="a")


async def test_a_record_too_large_for_kafka_does_not_block_every_later_turn(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"o{uuid.uuid4().hex[:10]}."
    settings = Settings(topic_prefix=prefix, partitions=4, max_content_bytes=4 * 1024 * 1024)
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        producer = HostProducer(f"kafka://{kafka_bootstrap}", tmp_path / "outbox.db", settings=settings,
                                retry_backoff_s=0.2)
        await producer.start()
        try:
            with contextlib.suppress(ValueError):  # refusing it up front is a fine answer
                await producer.publish(make_turn(1, "long " * (2 * 1024 * 1024 // 5), scope=ANN))
            await producer.publish(make_turn(2, "a short turn of another user", scope=BOB))
            with contextlib.suppress(TimeoutError):
                await producer.flush(timeout_s=10)
            left = producer.pending()
        finally:
            await producer.stop(flush_timeout_s=0.5)
        delivered = [decode_event(r.value) for r in await bus.read_all([topic_name(Topic.TURNS, prefix)])]
    finally:
        await bus.stop()
    assert [e.key for e in delivered] == [BOB.home], "the short turn was never delivered"
    assert left == 0, f"{left} event(s) left in the outbox, retried forever"
