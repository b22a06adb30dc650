"""Turning bus records into processor calls and back: shared by the embedded runtime and the faust app.

Each input record ends in exactly one of: outputs published, a dead letter (cannot be processed), or a
deferred work item (retry later: model failure, invalid output, budget). Nothing is dropped silently.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from altm.bus import OutgoingRecord, Record
from altm.core import DeadLetter, DecodeError, Event, decode_event, derive_id, encode
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline.processors import Deferred, ProcessingError, Processor, ProcessorContext
from altm.pipeline.writer import original_text
from altm.store import ShardSet

log = logging.getLogger("altm.streams")


def dead_letter_record(
    settings: Settings, record: Record | None, *, stage: str, error: str, original: bytes,
    line: int | None = None,
) -> OutgoingRecord:
    dead = DeadLetter(
        stage=stage,
        error=error,
        original=original_text(original),
        source_topic=record.topic if record else None,
        source_partition=record.partition if record else None,
        source_offset=record.offset if record else None,
        line=line,
        timestamp=datetime.now(UTC),
    )
    return OutgoingRecord(
        topic_name(Topic.DLQ, settings.topic_prefix), encode(dead), key=record.key if record else None
    )


def host_record(settings: Settings, event: Event) -> OutgoingRecord:
    """The record a host publishes for a turn or control event: its topic, keyed by the scope home."""
    topic = {"turn": Topic.TURNS, "control": Topic.CONTROL}.get(event.event_type)
    if topic is None:
        raise ValueError(f"hosts publish turn and control events, not {event.event_type!r}")
    return OutgoingRecord(topic_name(topic, settings.topic_prefix), encode(event), key=event.key)


@dataclass
class StageResult:
    outgoing: list[OutgoingRecord] = field(default_factory=list)
    deferred: list[tuple[Record, str]] = field(default_factory=list)


def _decode(processor: Processor, record: Record, settings: Settings) -> Event | OutgoingRecord:
    try:
        event = decode_event(record.value)
    except DecodeError as exc:
        return dead_letter_record(settings, record, stage=processor.name, error=str(exc), original=record.value)
    if record.key != event.key:
        error = (
            f"scope home {event.key!r} does not match the record key {record.key!r}: every topic is keyed "
            "by the scope home tenant/workspace/user"
        )
        return dead_letter_record(settings, record, stage=processor.name, error=error, original=record.value)
    return event


async def _one(processor: Processor, record: Record, event: Event, ctx: ProcessorContext,
               result: StageResult) -> None:
    settings = ctx.settings
    try:
        proposals = await processor.process(event, ctx)
    except Deferred as exc:
        result.deferred.append((record, str(exc)))
        return
    except ProcessingError as exc:
        result.outgoing.append(
            dead_letter_record(settings, record, stage=processor.name, error=str(exc), original=record.value))
        return
    except Exception as exc:  # a processor bug must not stall the partition: dead-letter it, loudly
        log.exception("processor %s failed on %s[%d]@%d", processor.name, record.topic, record.partition,
                      record.offset)
        error = f"internal error in {processor.name}: {type(exc).__name__}: {exc}"
        result.outgoing.append(
            dead_letter_record(settings, record, stage=processor.name, error=error, original=record.value))
        return
    out_topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    result.outgoing.extend(OutgoingRecord(out_topic, encode(p), key=p.key) for p in proposals)


async def run_records(processor: Processor, records: Sequence[Record], ctx: ProcessorContext) -> StageResult:
    """Decode, check keys, process (batched when the processor supports it)."""
    result = StageResult()
    decoded: list[tuple[Record, Event]] = []
    for rec in records:
        ev = _decode(processor, rec, ctx.settings)
        if isinstance(ev, OutgoingRecord):
            result.outgoing.append(ev)
        else:
            decoded.append((rec, ev))
    if not decoded:
        return result
    try:
        batched = await processor.process_batch([ev for _, ev in decoded], ctx)
    except Deferred as exc:
        result.deferred.extend((rec, str(exc)) for rec, _ in decoded)
        return result
    if batched is not None:
        out_topic = topic_name(Topic.PROPOSALS, ctx.settings.topic_prefix)
        result.outgoing.extend(OutgoingRecord(out_topic, encode(p), key=p.key) for p in batched)
        return result
    for rec, ev in decoded:
        await _one(processor, rec, ev, ctx, result)
    return result


async def run_processor(processor: Processor, record: Record, ctx: ProcessorContext) -> StageResult:
    return await run_records(processor, [record], ctx)


def next_offsets(records: Sequence[Record]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for rec in records:
        out[(rec.topic, rec.partition)] = max(out.get((rec.topic, rec.partition), 0), rec.offset + 1)
    return out


class DeferredQueue:
    """Deferred work items, kept in the shard of their partition (runtime bookkeeping, not memory state)."""

    def __init__(self, shards: ShardSet, settings: Settings) -> None:
        self.shards = shards
        self.settings = settings

    def _backoff(self, attempts: int) -> float:
        return float(min(self.settings.defer_backoff_s * (2 ** max(0, attempts - 1)),
                         self.settings.defer_max_backoff_s))

    def add(self, processor: str, record: Record, reason: str) -> None:
        work_id = derive_id("work", processor, record.topic, str(record.partition), str(record.offset))
        shard = self.shards.get(record.partition)
        row = shard.conn.execute("SELECT attempts FROM deferred_work WHERE work_id=?", (work_id,)).fetchone()
        attempts = (int(row[0]) + 1) if row else 1
        log.warning("deferred %s work on %s[%d]@%d (attempt %d): %s", processor, record.topic, record.partition,
                    record.offset, attempts, reason)
        shard.conn.execute(
            "INSERT INTO deferred_work (work_id, processor, topic, partition, offset, key, value, reason, "
            "attempts, next_attempt_at, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(work_id) DO UPDATE SET reason=excluded.reason, attempts=excluded.attempts, "
            "next_attempt_at=excluded.next_attempt_at",
            (work_id, processor, record.topic, record.partition, record.offset, record.key, record.value, reason,
             attempts, time.time() + self._backoff(attempts), datetime.now(UTC).isoformat()),
        )

    def due(self, processor: str, limit: int = 100) -> list[tuple[str, Record]]:
        now = time.time()
        out: list[tuple[str, Record]] = []
        for shard in self.shards.existing():
            for r in shard.conn.execute(
                "SELECT work_id, topic, partition, offset, key, value FROM deferred_work "
                "WHERE processor=? AND next_attempt_at<=? ORDER BY partition, offset LIMIT ?",
                (processor, now, limit),
            ):
                out.append((str(r[0]), Record(r[1], int(r[2]), int(r[3]), r[4], bytes(r[5]))))
        return out

    def done(self, work_id: str, partition: int) -> None:
        self.shards.get(partition).conn.execute("DELETE FROM deferred_work WHERE work_id=?", (work_id,))

    def count(self) -> int:
        return sum(int(s.conn.execute("SELECT COUNT(*) FROM deferred_work").fetchone()[0])
                   for s in self.shards.existing())
