"""Issue 13, robust edges: the host SDK re-sent a whole batch when part of it failed, so records the broker
already had were published twice. Now each acknowledged record leaves the outbox, per partition up to its
first failure (order per key is kept)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError

from altm.bus import OutgoingRecord, turns_end
from altm.core import ControlAction, ControlEvent, Scope, partition_for
from altm.interfaces.sdk import HostProducer
from tests.support.turns import T0, make_turn

A = Scope(tenant_id="t", workspace_id="w", user_id="a", agent_id="x")
B = next(Scope(tenant_id="t", workspace_id="w", user_id=f"b{i}", agent_id="x") for i in range(100)
         if partition_for(f"t/w/b{i}", 4) != partition_for(A.home, 4))


class FlakyProducer:
    """Acknowledges every send but the ones listed to fail (by the turn text they carry)."""

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.sent: list[bytes] = []

    async def send(self, topic: str, *, value: bytes, key: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]] | None = None) -> asyncio.Future[Any]:
        self.sent.append(value)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if any(f.encode() in value for f in self.failing):
            fut.set_exception(KafkaTimeoutError("no ack"))
        else:
            fut.set_result(None)
        return fut


async def test_a_partly_acknowledged_batch_is_not_sent_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    producer = HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db", partitions=4)
    events = [make_turn(i, f"a-{i}", scope=A) for i in range(3)] + [make_turn(i, f"b-{i}", scope=B) for i in range(3)]
    await producer.publish_many(events)
    flaky = FlakyProducer({"a-1"})

    async def ensure() -> FlakyProducer:
        return flaky

    monkeypatch.setattr(producer, "_ensure_producer", ensure)
    with pytest.raises(KafkaTimeoutError):
        await producer._send(producer._outbox.oldest(10))
    left = [rec.value for _, rec in producer._outbox.oldest(10)]
    assert len(left) == 2 and all(b"a-1" in v or b"a-2" in v for v in left)  # a-0 and every b-* are done
    flaky.failing.clear()
    await producer._send(producer._outbox.oldest(10))
    assert producer.pending() == 0
    sends = [sum(f"b-{i}".encode() in v for v in flaky.sent) for i in range(3)] + [
        sum(b"a-0" in v for v in flaky.sent)]
    assert sends == [1, 1, 1, 1]  # acknowledged records went out once
    assert sum(b"a-1" in v for v in flaky.sent) == 2  # the failed one again, then a-2 after it, in order
    producer._outbox.close()


# Found by a review: the erasure's send failed and the turn sent after it was acknowledged; the retry marked the
# erasure after that turn (which it then erased) and sent the turn a second time.


class _Broker:
    """Records per topic; the control topic fails once (a request timeout, e.g. its leader moving)."""

    def __init__(self) -> None:
        self.logs: dict[str, list[tuple[bytes, tuple[tuple[str, bytes], ...]]]] = {}
        self.fail_control = 1

    async def send(self, topic: str, *, value: bytes, key: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]] | None = None) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if topic.endswith("control") and self.fail_control:
            self.fail_control -= 1
            fut.set_exception(KafkaTimeoutError("no ack"))
        else:
            self.logs.setdefault(topic, []).append((value, tuple(headers or ())))
            fut.set_result(None)
        return fut


async def test_a_turn_sent_after_an_erasure_stays_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    producer = HostProducer("kafka://127.0.0.1:9", tmp_path / "outbox.db", partitions=1)
    erase = ControlEvent(event_id="ctl_erase", scope=A, timestamp=T0, action=ControlAction.ERASE,
                         payload={"target": "agent", "reason": "asked"})
    await producer.publish_many([erase])
    await producer.publish_many([make_turn(1, "sent after the erasure", scope=A)])
    broker = _Broker()

    async def ensure() -> _Broker:
        return broker

    async def end(partition: int) -> int:
        return len(broker.logs.get("altm.turns", []))

    monkeypatch.setattr(producer, "_ensure_producer", ensure)
    monkeypatch.setattr(producer, "_turns_end", end)
    with pytest.raises(KafkaTimeoutError):
        await producer._send(producer._outbox.oldest(10))
    while producer.pending():
        await producer._send(producer._outbox.oldest(10))
    (_, headers), = broker.logs["altm.control"]
    mark = turns_end(OutgoingRecord("altm.control", b"", headers=headers))
    assert mark == 0, f"the turn the host sent after the erasure is at offset 0, before the erasure's mark {mark}"
    assert len(broker.logs["altm.turns"]) == 1  # and it was sent once
    producer._outbox.close()
