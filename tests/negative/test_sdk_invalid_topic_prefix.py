"""A topic prefix that cannot name a Kafka topic is accepted: the host SDK takes events it can never deliver.

Finding: ``Settings.topic_prefix`` has no validation (altm/core/settings.py:16) and ``HostProducer``
(altm/interfaces/sdk/_producer.py:47-60) uses it as given; topic names are the prefix plus ``turns``/``control``
(``topic_name``). Kafka topic names may hold only ASCII letters, digits, ``.``, ``_`` and ``-`` (at most 249
characters). With a prefix such as ``"altm. "`` (a trailing space from an env file) or ``"agents/prod."``,
``publish`` commits every event to the outbox and returns ("durable"), and delivery can never succeed: the
broker answers the metadata request for ``"altm. turns"`` with INVALID_TOPIC, ``AIOKafkaProducer.send`` gives up
with ``UnknownTopicOrPartitionError`` after its request timeout, and ``_run`` (altm/interfaces/sdk/_producer.py:
139-143) logs "broker unavailable" and retries forever (checked against a broker: ``flush`` times out, the
event stays in the outbox; only log lines say why). ``publish`` never tells the host its configuration is
wrong; the workers, by contrast, fail at start (``KafkaBus.ensure_topics``: "did not appear in broker
metadata").

Reproduction: ``HostProducer("kafka://...", outbox, settings=Settings(topic_prefix="altm. "))`` is constructed
and ``publish`` of a turn returns.

Expected: a prefix whose topic names Kafka refuses is refused when the settings or the producer are made,
with a ``ValueError`` naming the prefix (and the allowed characters), before any event is accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.turns import make_turn


@pytest.mark.parametrize("prefix", ["altm. ", "agents/prod.", "tenant:acme."])
async def test_a_prefix_that_cannot_name_a_kafka_topic_is_refused(tmp_path: Path, prefix: str) -> None:
    producer: HostProducer | None = None
    try:
        with pytest.raises(ValueError, match="prefix"):
            producer = HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db",
                                    settings=Settings(topic_prefix=prefix))
            await producer.publish(make_turn(1, "accepted, never delivered"))
    finally:
        if producer is not None:
            producer._outbox.close()
