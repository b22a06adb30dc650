"""The records hosts and stages publish: host events on their topics, dead letters on ``dlq``."""

from __future__ import annotations

from datetime import UTC, datetime

from altm.bus._base import OutgoingRecord, Record
from altm.core import DeadLetter, Event, Settings, Topic, encode, original_text, topic_name


def host_record(settings: Settings, event: Event) -> OutgoingRecord:
    """The record a host publishes for a turn or control event: its topic, keyed by the scope home."""
    topic = {"turn": Topic.TURNS, "control": Topic.CONTROL}.get(event.event_type)
    if topic is None:
        raise ValueError(f"hosts publish turn and control events, not {event.event_type!r}")
    return OutgoingRecord(topic_name(topic, settings.topic_prefix), encode(event), key=event.key)


def dead_letter_record(
    settings: Settings, record: Record | None, *, stage: str, error: str, original: bytes,
    line: int | None = None,
) -> OutgoingRecord:
    """A dead letter for ``record`` (or for a line of file input), with the stage and the reason."""
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
