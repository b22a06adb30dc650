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
from aiokafka.errors import InvalidTopicError, KafkaError, MessageSizeTooLargeError, RecordTooLargeError

from altm.app.ingest import checked
from altm.bus import OutgoingRecord, TopicPartition, awaiting_turns_end, host_record, needs_turns_end, with_turns_end
from altm.bus.embedded import LocalOutbox, Pending
from altm.bus.kafka import MAX_RECORD_BYTES, EndOffsets, parse_broker_url, record_size
from altm.bus.sealing import Sealer
from altm.core import DecodeError, Event, Topic, topic_name
from altm.core.partitioner import partition_for
from altm.core.settings import Settings

log = logging.getLogger("altm.sdk")

UNDELIVERABLE = (MessageSizeTooLargeError, RecordTooLargeError, InvalidTopicError)
"""What the broker will refuse however often a record is sent: the record is set aside (kept in the outbox file's
``undeliverable`` table, with the reason), not retried before every later event for ever."""


class Undeliverable(Exception):
    """The record ``seq`` of the outbox can never be delivered (see :data:`UNDELIVERABLE`)."""

    def __init__(self, seq: int, error: BaseException) -> None:
        super().__init__(f"outbox record {seq}: {type(error).__name__}: {error}")
        self.seq = seq
        self.error = error

class HostProducer:
    """Idempotent, ordered, outage-proof publishing of host events. One producer per outbox file."""

    def __init__(self, broker: str, outbox: str | Path, *, settings: Settings | None = None,
                 partitions: int | None = None, retry_backoff_s: float = 0.5, batch: int = 200,
                 sealer: Sealer | None = None) -> None:
        self.bootstrap = parse_broker_url(broker)
        self.settings = settings or Settings()
        self.partitions = partitions  # None: each topic's own partition count, asked of the broker
        self._partitions: dict[str, int] = {}
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
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            except Exception:  # a sender that died: stopping still closes the producer and the outbox
                log.exception("the host producer's sender had stopped")
            self._task = None
        await self._close_producer()
        self._outbox.close()

    async def publish(self, event: Event) -> None:
        await self.publish_many([event])

    async def publish_many(self, events: Sequence[Event]) -> None:
        """Durable when this returns (the outbox is committed); delivery happens in the background. Events the
        workers would dead-letter (a turn over ``max_content_bytes``, a control request its stage cannot apply)
        and records too large for Kafka are refused with a ``ValueError`` saying why; then nothing of the call is
        added."""
        for event in events:
            _acceptable(event, self.settings)
        records = [awaiting_turns_end(host_record(self.settings, e)) for e in events]
        sealed = [self.sealer.seal(r) for r in records] if self.sealer is not None else records
        for rec in sealed:
            if (size := record_size(rec)) > MAX_RECORD_BYTES:
                raise ValueError(f"a {size}-byte record is over the {MAX_RECORD_BYTES} bytes a Kafka record may "
                                 f"hold (lower ALTM_MAX_CONTENT_BYTES or split the message); nothing published")
        self._outbox.add(sealed)
        self._drained.clear()
        self._wake.set()

    def undeliverable(self) -> list[tuple[int, str]]:
        """Records the broker refused for good (sequence number, reason), set aside in the outbox file."""
        return self._outbox.set_aside_records()

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
                except Undeliverable as exc:
                    log.error("set aside an event the broker refuses for good: %s", exc)
                    self._outbox.set_aside(exc.seq, str(exc))
                except Exception as exc:  # the broker away, an offsets request failed: retried, never the end
                    log.warning("delivery failed (%s: %s); %d events kept in the outbox", type(exc).__name__, exc,
                                self.pending())
                    await self._close_producer()
                    await asyncio.sleep(self.retry_backoff_s)
            self._drained.set()

    async def _partition_count(self, producer: AIOKafkaProducer, topic: str) -> int:
        """``topic``'s partition count, as the broker has it (the workers route by it), asked once."""
        if self.partitions is not None:
            return self.partitions
        if topic not in self._partitions:
            found = await producer.partitions_for(topic)
            if not found:
                raise KafkaError(f"topic {topic} has no partitions the broker knows of")
            self._partitions[topic] = len(found)
        return self._partitions[topic]

    async def _send(self, rows: list[Pending]) -> None:
        """Send a batch; acknowledge every record the broker acknowledged, even when others of the batch failed
        (then raise the first error). Per partition only the records before its first failure count, so a
        retry keeps the order per key and never re-sends a record the broker already has ahead of it."""
        producer = await self._ensure_producer()
        sent: list[tuple[int, int, Any]] = []
        try:
            for seq, rec in rows:  # in outbox order: per key (and partition) order is kept
                count = await self._partition_count(producer, rec.topic)
                part = partition_for(rec.key, count) if rec.key is not None else 0
                marking = needs_turns_end(rec)
                if marking:
                    rec = await self._marked(rec, part, sent)
                try:
                    future = await producer.send(
                        rec.topic, value=rec.value, key=rec.key.encode() if rec.key is not None else None,
                        partition=part, headers=list(rec.headers) or None)
                except UNDELIVERABLE as exc:
                    raise Undeliverable(seq, exc) from exc
                sent.append((seq, part, future))
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
        errors = [(seq, o) for (seq, _, _), o in zip(sent, outcomes, strict=True) if isinstance(o, BaseException)]
        if errors:
            seq, error = errors[0]
            raise Undeliverable(seq, error) if isinstance(error, UNDELIVERABLE) else error


def _acceptable(event: Event, settings: Settings) -> None:
    """Refuse (``ValueError``) what every worker would dead-letter: a turn over the content limit, a control
    request whose payload its stage cannot apply (an erasure of a session that names none)."""
    try:
        checked(event, settings)  # the content limit, and what the control stages cannot apply
    except DecodeError as exc:
        raise ValueError(str(exc)) from None
