"""Turning bus records into processor calls and back: shared by the embedded runtime and the faust app."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from ..config import Settings
from ..schemas import DeadLetter, DecodeError, Event, decode_event, encode
from .bus import OutgoingRecord, Record
from .processors import ProcessingError, Processor, ProcessorContext
from .topics import Topic, topic_name
from .writer import original_text

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


async def run_processor(
    processor: Processor, record: Record, ctx: ProcessorContext
) -> list[OutgoingRecord]:
    """Decode, check the key, process; anything that cannot be processed becomes one DLQ record."""
    settings = ctx.settings
    try:
        event = decode_event(record.value)
    except DecodeError as exc:
        return [dead_letter_record(settings, record, stage=processor.name, error=str(exc), original=record.value)]
    if record.key != event.key:
        error = (
            f"scope home {event.key!r} does not match the record key {record.key!r}: every topic is keyed "
            "by the scope home tenant/workspace/user"
        )
        return [dead_letter_record(settings, record, stage=processor.name, error=error, original=record.value)]
    try:
        proposals = await processor.process(event, ctx)
    except ProcessingError as exc:
        return [dead_letter_record(settings, record, stage=processor.name, error=str(exc), original=record.value)]
    except Exception as exc:  # a processor bug must not stall the partition: dead-letter it, loudly
        log.exception("processor %s failed on %s[%d]@%d", processor.name, record.topic, record.partition,
                      record.offset)
        error = f"internal error in {processor.name}: {type(exc).__name__}: {exc}"
        return [dead_letter_record(settings, record, stage=processor.name, error=error, original=record.value)]
    out_topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    return [OutgoingRecord(out_topic, encode(p), key=p.key) for p in proposals]


def next_offsets(records: Sequence[Record]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for rec in records:
        out[(rec.topic, rec.partition)] = max(out.get((rec.topic, rec.partition), 0), rec.offset + 1)
    return out
