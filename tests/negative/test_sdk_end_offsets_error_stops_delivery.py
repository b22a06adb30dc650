"""One failed end-offsets request kills the host SDK's delivery for good, while ``publish`` keeps succeeding.

Finding: before it sends a control event that orders derivation (an erasure, a rollback, a retention pass),
the SDK asks the broker for the turns topic's end offset (``HostProducer._marked`` → ``_turns_end`` →
``EndOffsets.ask``, altm/interfaces/sdk/_producer.py:123-132). ``EndOffsets.ask`` turns every ``KafkaError``
of that request into a ``BusError`` (altm/bus/kafka/_bus.py:54-57), but the delivery loop retries only
``KafkaError`` and ``OSError`` (altm/interfaces/sdk/_producer.py:139): a ``BusError`` — a request timeout, a
partition leader moving, the broker restarting at that moment — escapes ``_run`` and ends the background task.
Nothing restarts it (``start`` sees ``_task`` set), so from then on every ``publish`` returns ("durable") and
nothing is ever delivered: the erasure and every turn after it stay in the outbox; ``flush`` times out;
``stop`` re-raises the old ``BusError`` and leaves the outbox open.

Reproduction: an outbox holding an erasure and a turn; the broker acknowledges every record, and the first
end-offsets request fails with a ``KafkaTimeoutError`` (the second one answers). ``flush(timeout_s=5)``.

Expected: a failed end-offsets request is retried like any other broker error (after ``retry_backoff_s``);
``flush`` returns within the timeout, the outbox is empty, the erasure reaches the control topic with its
turns end and the turn reaches the turns topic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition as KafkaTP
from aiokafka.errors import KafkaTimeoutError

import altm.bus.kafka._bus as kafka_bus
from altm.bus import OutgoingRecord, turns_end
from altm.core import ControlAction, ControlEvent
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.turns import SCOPE, make_turn


class _Broker:
    """Acknowledges every record at once; keeps what it got per topic."""

    def __init__(self) -> None:
        self.logs: dict[str, list[tuple[bytes, tuple[tuple[str, bytes], ...]]]] = {}

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1, 2, 3}

    async def send(self, topic: str, *, value: bytes, key: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]] | None = None) -> asyncio.Future[Any]:
        self.logs.setdefault(topic, []).append((value, tuple(headers or ())))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


class _Probe:
    """Stands in for the AIOKafkaConsumer ``EndOffsets`` asks: its first end-offsets request times out."""

    failures = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def end_offsets(self, tps: Sequence[KafkaTP]) -> dict[KafkaTP, int]:
        if _Probe.failures:
            _Probe.failures -= 1
            raise KafkaTimeoutError("the partition's leader is moving")
        return {tp: 0 for tp in tps}


async def test_a_failed_end_offsets_request_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_bus, "AIOKafkaConsumer", _Probe)
    monkeypatch.setattr(_Probe, "failures", 1)
    producer = HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db", settings=Settings(partitions=4),
                            retry_backoff_s=0.05)
    broker = _Broker()

    async def ensure() -> _Broker:
        return broker

    monkeypatch.setattr(producer, "_ensure_producer", ensure)
    erase = ControlEvent(event_id="ctl_erase_agent", scope=SCOPE, timestamp=datetime(2026, 12, 1, tzinfo=UTC),
                         action=ControlAction.ERASE, payload={"target": "agent", "reason": "user asked"})
    await producer.publish_many([erase, make_turn(1, "sent after the erasure")])
    await producer.start()
    try:
        await producer.flush(timeout_s=5)
        assert producer.pending() == 0
    finally:
        task = producer._task
        if task is not None and task.done() and not task.cancelled():
            died = task.exception()
            producer._task = None  # so that the cleanup below does not raise it again
            await producer.stop(flush_timeout_s=0.1)
            raise AssertionError(f"the SDK's delivery task died: {died!r}")
        await producer.stop(flush_timeout_s=0.1)
    ((_, headers),) = broker.logs["altm.control"]
    assert turns_end(OutgoingRecord("altm.control", b"", headers=headers)) == 0
    assert len(broker.logs["altm.turns"]) == 1
