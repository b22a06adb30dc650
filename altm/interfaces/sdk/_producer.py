"""The host producer SDK: agents publish turn and control events to Kafka with the same schemas, keys and
partitioner as ALTM, through a local durable outbox (SQLite), so a broker outage loses nothing: events are
delivered in order when the broker returns.

    producer = HostProducer("kafka://127.0.0.1:9092", outbox="agent-outbox.db", sealer=sealer)
    await producer.start()
    await producer.publish(TurnEvent(...))   # durable once this returns
    await producer.flush(timeout_s=30)       # optional: wait until the broker has everything
    await producer.stop()

With ``sealer`` (:func:`altm.wiring.open_sealer` over the deployment's key store) events are sealed before
they reach the outbox, as every ALTM process seals them; without one they travel in the clear and an
erasure cannot shred them from the topics.

A control event that orders derivation (an erasure, a retention pass, a rollback: :mod:`altm.bus._order`)
carries the turns topic's end offset of its partition when it is delivered: the turns sent before it are
acknowledged first, then the end is asked of the broker, and nothing after it is sent before it is acknowledged,
so the workers apply it after those turns and before the ones sent after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from altm.bus import OutgoingRecord, TopicPartition, awaiting_turns_end, host_record, needs_turns_end, with_turns_end
from altm.bus.embedded import LocalOutbox, Pending
from altm.bus.kafka import EndOffsets, parse_broker_url
from altm.bus.sealing import Sealer
from altm.core import Event, Topic, topic_name
from altm.core.partitioner import partition_for
from altm.core.settings import Settings

log = logging.getLogger("altm.sdk")

class HostProducer:
    """Idempotent, ordered, outage-proof publishing of host events. One producer per outbox file."""

    def __init__(self, broker: str, outbox: str | Path, *, settings: Settings | None = None,
                 partitions: int | None = None, retry_backoff_s: float = 0.5, batch: int = 200,
                 sealer: Sealer | None = None) -> None:
        self.bootstrap = parse_broker_url(broker)
        self.settings = settings or Settings()
        self.partitions = partitions or self.settings.partitions
        self.retry_backoff_s = retry_backoff_s
        self.batch = batch
        self.sealer = sealer
        self._outbox = LocalOutbox(outbox)
        self._producer: AIOKafkaProducer | None = None
        self._ends = EndOffsets(self.bootstrap, client_id="altm-sdk-offsets")  # the turns topic's, for marks
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self.delivered = 0

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="altm-host-producer")
            self._wake.set()

    async def stop(self, flush_timeout_s: float = 5.0) -> None:
        """Flush what the broker accepts within the timeout; the rest stays in the outbox for next time."""
        with contextlib.suppress(TimeoutError):
            await self.flush(flush_timeout_s)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._close_producer()
        self._outbox.close()

    async def publish(self, event: Event) -> None:
        await self.publish_many([event])

    async def publish_many(self, events: Sequence[Event]) -> None:
        """Durable when this returns (the outbox is committed); delivery happens in the background."""
        records = [awaiting_turns_end(host_record(self.settings, e)) for e in events]
        self._outbox.add([self.sealer.seal(r) for r in records] if self.sealer is not None else records)
        self._drained.clear()
        self._wake.set()

    def pending(self) -> int:
        return self._outbox.pending()

    async def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every event in the outbox has been acknowledged by the broker."""
        if self.pending() == 0:
            return
        self._drained.clear()
        self._wake.set()
        await asyncio.wait_for(self._drained.wait(), timeout_s)

    async def _ensure_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, enable_idempotence=True, acks="all",
                                        linger_ms=5, request_timeout_ms=10_000)
            try:
                await producer.start()
            except BaseException:
                await producer.stop()
                raise
            self._producer = producer
        return self._producer

    async def _close_producer(self) -> None:
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.stop()
            self._producer = None
        await self._ends.stop()

    async def _turns_end(self, partition: int) -> int:
        """The turns topic's end offset in ``partition`` now."""
        tp = TopicPartition(topic_name(Topic.TURNS, self.settings.topic_prefix), partition)
        return (await self._ends.ask([tp]))[tp]

    async def _marked(self, rec: OutgoingRecord, part: int, sent: list[tuple[int, int, Any]]) -> OutgoingRecord:
        """``rec`` with its turns end, once what was sent before it is acknowledged (raises what failed)."""
        for _, _, fut in sent:
            await fut
        return with_turns_end(rec, await self._turns_end(part))

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while rows := self._outbox.oldest(self.batch):
                try:
                    await self._send(rows)
                except (KafkaError, OSError) as exc:
                    log.warning("broker unavailable (%s); %d events kept in the outbox", exc, self.pending())
                    await self._close_producer()
                    await asyncio.sleep(self.retry_backoff_s)
                    continue
            self._drained.set()

    async def _send(self, rows: list[Pending]) -> None:
        """Send a batch; acknowledge every record the broker acknowledged, even when others of the batch failed
        (then raise the first error). Per partition only the records before its first failure count, so a
        retry keeps the order per key and never re-sends a record the broker already has ahead of it."""
        producer = await self._ensure_producer()
        sent: list[tuple[int, int, Any]] = []
        try:
            for seq, rec in rows:  # in outbox order: per key (and partition) order is kept
                part = partition_for(rec.key, self.partitions) if rec.key is not None else 0
                marking = needs_turns_end(rec)
                if marking:
                    rec = await self._marked(rec, part, sent)
                sent.append((seq, part, await producer.send(
                    rec.topic, value=rec.value, key=rec.key.encode() if rec.key is not None else None,
                    partition=part, headers=list(rec.headers) or None)))
                if marking:  # acknowledged before anything after it is sent: a retry marks it again, and a
                    await sent[-1][2]  # turn sent after it is never on the log before it
        finally:
            outcomes = await asyncio.gather(*(fut for _, _, fut in sent), return_exceptions=True)
            failed: set[int] = set()
            acknowledged = []
            for (seq, part, _), outcome in zip(sent, outcomes, strict=True):
                if isinstance(outcome, BaseException) or part in failed:
                    failed.add(part)
                    continue
                acknowledged.append(seq)
            self._outbox.acknowledge_each(acknowledged)
            self.delivered += len(acknowledged)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            raise errors[0]
