"""The host SDK routes by its own configured partition count, not by the topics' (against a real broker).

Finding: ``HostProducer`` takes the partition count from its ``Settings`` (``partitions or
self.settings.partitions``, altm/interfaces/sdk/_producer.py:53, default 4, or ``ALTM_PARTITIONS`` of the
*host* process) and sends every record to ``partition_for(key, self.partitions)`` with an explicit partition
(altm/interfaces/sdk/_producer.py:153-160). It never asks the broker how many partitions the deployment's
topics have, although every other publisher does (``KafkaBus.publish_many`` → ``KafkaBus.partitions``,
altm/bus/kafka/_bus.py:148-163) and the count is fixed by whoever made the topics (``altm worker
--partitions``, ``altm publish --partitions``). With the README's own example (``HostProducer(broker,
outbox=...)``) against a deployment made with another count:

- more partitions on the broker (8): the turns of a user land on partition ``partition_for(home, 4)``, not on
  the user's partition ``partition_for(home, 8)``, where every other publisher puts the user's control events:
  an erasure or rollback published by the service (on the user's partition, marked with that partition's turns
  end, altm/bus/_order.py) is not ordered with them, so a turn sent before the erasure can be captured after
  it (and one sent after it before it);
- fewer partitions on the broker (2): ``AIOKafkaProducer.send`` fails its "Unrecognized partition" assertion
  for a user whose ``partition_for(home, 4)`` is 2 or 3. ``AssertionError`` is not retried
  (altm/interfaces/sdk/_producer.py:139): it ends the delivery task, and from then on ``publish`` returns
  ("durable") while nothing is delivered, for every user.

Reproduction: topics made with 8 (then 2) partitions; a ``HostProducer`` with the deployment's topic prefix
and no partition count publishes one turn for each of several users and flushes.

Expected: the SDK routes by the partition count of the topic it sends to (asked of the broker, as
``KafkaBus.partitions`` does): every turn is delivered (``flush`` returns) and lands on
``partition_for(home, <topic's partition count>)``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from altm.bus.kafka import KafkaBus
from altm.core import Scope, Topic, all_topic_specs, decode_event, partition_for, topic_name
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.turns import make_turn

pytestmark = pytest.mark.kafka

USERS = [Scope(tenant_id="t", workspace_id="w", user_id=f"u{i}", agent_id="a") for i in range(12)]


async def _deliver(kafka_bootstrap: str, tmp_path: Path, partitions: int) -> dict[str, int]:
    """Topics made with ``partitions``; one turn per user through the SDK; the partition each home's turn is on."""
    prefix = f"p{uuid.uuid4().hex[:10]}."
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(partitions, prefix))
        producer = HostProducer(f"kafka://{kafka_bootstrap}", tmp_path / f"outbox{partitions}.db",
                                settings=Settings(topic_prefix=prefix), retry_backoff_s=0.2)
        await producer.start()
        try:
            await producer.publish_many([make_turn(i, f"turn of {s.user_id}", scope=s) for i, s in enumerate(USERS)])
            await producer.flush(timeout_s=12)
        finally:
            task = producer._task
            died = task.exception() if task is not None and task.done() and not task.cancelled() else None
            if died is not None:
                producer._task = None
            await producer.stop(flush_timeout_s=0.5)
            assert died is None, f"the SDK's delivery task died: {died!r}"
        records = await bus.read_all([topic_name(Topic.TURNS, prefix)])
    finally:
        await bus.stop()
    return {decode_event(r.value).key: r.partition for r in records}


async def test_turns_land_on_their_users_partition_when_the_topics_have_more_partitions(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    placed = await _deliver(kafka_bootstrap, tmp_path, 8)
    assert placed == {s.home: partition_for(s.home, 8) for s in USERS}


async def test_turns_are_delivered_when_the_topics_have_fewer_partitions(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    assert any(partition_for(s.home, 4) >= 2 for s in USERS)
    placed = await _deliver(kafka_bootstrap, tmp_path, 2)
    assert placed == {s.home: partition_for(s.home, 2) for s in USERS}
