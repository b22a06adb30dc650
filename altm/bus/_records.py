"""The records hosts and stages publish: host events on their topics, dead letters on ``dlq``."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from opentelemetry import propagate
from opentelemetry.context import Context

from altm.bus._base import Headers, OutgoingRecord, Record
from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ControlAction,
    ControlEvent,
    DeadLetter,
    Event,
    Settings,
    Topic,
    encode,
    event_ref,
    topic_name,
)

TRACE_HEADERS = ("traceparent", "tracestate")
"""W3C trace context headers: one turn's path through the stages is one trace."""

LINE_HEADER = "altm-line"
"""Header of a record published from file input: the 1-based line it came from, for its dead letters."""

EVENT_REF_HEADER = "altm-event-ref"
"""Header of a retention or compaction pass (a lifecycle control event): ``event_ref`` of its id, in the clear. A
replay that meets the pass shredded (an erasure destroyed its key) still knows which one it was: the tombstones it
made name it (``ShardTx.activate_forgotten``). A hash, not the id (a host may choose an id that says what it is
about); other control events carry none."""


def event_ref_of(record: Record) -> str | None:
    """The ref a lifecycle control event's record carries in the clear (:data:`EVENT_REF_HEADER`), or None."""
    for name, value in record.headers:
        if name == EVENT_REF_HEADER:
            return value.decode("ascii", errors="replace")
    return None


def trace_headers() -> Headers:
    """The current trace context (W3C ``traceparent``/``tracestate``) as record headers; none without a span."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return tuple((k, v.encode()) for k, v in sorted(carrier.items()) if k in TRACE_HEADERS)


def trace_context(record: Record) -> Context | None:
    """The trace context a record carries, or None."""
    carrier = {name: value.decode("ascii", errors="replace") for name, value in record.headers if name in TRACE_HEADERS}
    return propagate.extract(carrier) if carrier else None


def host_record(settings: Settings, event: Event, *, line: int | None = None) -> OutgoingRecord:
    """The record a host publishes for a turn or control event: its topic, keyed by the scope home (with the
    line of file input it came from, when given, and the trace context of the span publishing it)."""
    topic = {"turn": Topic.TURNS, "control": Topic.CONTROL}.get(event.event_type)
    if topic is None:
        raise ValueError(f"hosts publish turn and control events, not {event.event_type!r}")
    headers = (((LINE_HEADER, str(line).encode()),) if line is not None else ()) + trace_headers()
    if isinstance(event, ControlEvent) and event.action is ControlAction.LIFECYCLE:
        headers += ((EVENT_REF_HEADER, event_ref(event.event_id).encode()),)
    return OutgoingRecord(topic_name(topic, settings.topic_prefix), encode(event), key=event.key, headers=headers)


SOURCE_MS_HEADER = "altm-source-ms"
"""Header of a derived record: when the turn it comes from was published (ms since the epoch). Stages copy it
from input to output, so each one can tell how fresh what it just made searchable or derived is."""


def source_ms(record: Record) -> int:
    """When the turn behind ``record`` was published: its header, or (a turn itself) the record's own time."""
    for name, value in record.headers:
        if name == SOURCE_MS_HEADER and value.isdigit():
            return int(value)
    return record.timestamp_ms


def source_header(ms: int) -> tuple[str, bytes]:
    return (SOURCE_MS_HEADER, str(ms).encode())


LINEAGE_HEADER = "altm-lineage"
"""Header of a derived record: the id of a data key that a host record (turn or control event) behind it was
sealed with, one header per key, carried from stage to stage. Once one of those keys is destroyed the log can
no longer open that host record, so a replay would never make this one: the writer does not apply it (and what
an erasure took does not come back through work that was under way when it was applied)."""


def lineage_of(record: Record) -> tuple[str, ...]:
    """The data keys of the host records behind ``record`` (its :data:`LINEAGE_HEADER` values), in order."""
    return tuple(dict.fromkeys(v.decode("ascii", errors="replace") for k, v in record.headers
                               if k == LINEAGE_HEADER))


def lineage_headers(kids: tuple[str, ...]) -> Headers:
    return tuple((LINEAGE_HEADER, kid.encode("ascii")) for kid in kids)


CHANGE_HEADER = "altm-change"
"""Header of a change record: its :class:`~altm.core.ChangeMarker` (status, op, layer, removes), in the clear
beside a sealed value, so a stage skips changes it has no use for without opening or decoding them."""


def change_header(change: ChangeEvent) -> tuple[str, bytes]:
    return (CHANGE_HEADER, ChangeMarker.of(change).encode())


def change_marker(record: Record) -> ChangeMarker | None:
    """The marker a change record carries; None for any other record, or one written before markers were."""
    for name, value in record.headers:
        if name == CHANGE_HEADER:
            return ChangeMarker.parse(value)
    return None


def pack_headers(headers: Headers) -> bytes | None:
    """Headers as bytes for a store (an outbox row), None for none."""
    return orjson.dumps([[k, v.hex()] for k, v in headers]) if headers else None


def unpack_headers(packed: bytes | None) -> Headers:
    if not packed:
        return ()
    return tuple((str(k), bytes.fromhex(str(v))) for k, v in orjson.loads(packed))


def line_of(record: Record) -> int | None:
    for name, value in record.headers:
        if name == LINE_HEADER and value.isdigit():
            return int(value)
    return None


def dead_letter_record(
    settings: Settings, record: Record | None, *, stage: str, error: str, original: bytes,
    line: int | None = None, key: str | None = None,
) -> OutgoingRecord:
    """A dead letter for ``record`` (or for a line of file input), with the stage, the reason and the line of
    file input the record came from. Keyed as ``record`` was, or by ``key`` (the home a line of input names)."""
    dead = DeadLetter.of(
        original,
        stage=stage,
        error=error,
        source_topic=record.topic if record else None,
        source_partition=record.partition if record else None,
        source_offset=record.offset if record else None,
        line=line if line is not None or record is None else line_of(record),
        timestamp=datetime.now(UTC),
    )
    return OutgoingRecord(
        topic_name(Topic.DLQ, settings.topic_prefix), encode(dead), key=record.key if record else key
    )
