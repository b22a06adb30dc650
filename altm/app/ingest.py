"""Reading JSONL input: full turn/control events or flat transcript lines, one JSON object a line.

A flat transcript line is ``{"tenant_id", "workspace_id", "user_id", "agent_id", "session_id", "turn_id",
"role", "content", "timestamp"}`` (role user/assistant/tool; timestamp ISO 8601).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
from pydantic import ValidationError

from altm.app._input_file import IngestMarker, InputReader
from altm.bus import Bus, OutgoingRecord, TopicPartition, dead_letter_record, host_record, publish_marked
from altm.bus.sealing import owner_of
from altm.core import (
    ControlEvent,
    DecodeError,
    Event,
    TurnEvent,
    decode_event,
    describe_validation_error,
)
from altm.core.bounds import content_over_limit
from altm.core.codec import UNANTICIPATED_VALUE_ERRORS
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline import EmbeddedRuntime, dead_lettered
from altm.pipeline.processors import control_refusal
from altm.store import shard_counts

_SCOPE_FIELDS = ("tenant_id", "workspace_id", "user_id", "agent_id")
_FLAT_FIELDS = frozenset(
    {*_SCOPE_FIELDS, "session_id", "turn_id", "role", "content", "timestamp", "source_id", "metadata"}
)


def parse_line(text: str) -> Event:
    """One input line → a turn or control event; raises :class:`DecodeError` with the reason."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DecodeError(f"each line must be a JSON object, got {type(obj).__name__}")
    if "event_type" in obj:
        event = decode_event(text)
        if not isinstance(event, TurnEvent | ControlEvent):
            raise DecodeError(f"input lines carry turn or control events, not {event.event_type!r}")
        return event
    unknown = sorted(set(obj) - _FLAT_FIELDS)
    if unknown:
        raise DecodeError(f"unknown field(s) {unknown} in a transcript line")
    missing = [f for f in (*_SCOPE_FIELDS, "session_id", "turn_id", "role", "content", "timestamp")
               if f not in obj]
    if missing:
        raise DecodeError(f"transcript line is missing {missing}")
    data = {k: v for k, v in obj.items() if k not in _SCOPE_FIELDS}
    data["scope"] = {k: obj[k] for k in _SCOPE_FIELDS}
    try:
        return TurnEvent.model_validate(data)
    except ValidationError as exc:
        raise DecodeError(f"invalid transcript line: {describe_validation_error(exc)}") from None


def checked(event: Event, settings: Settings) -> Event:
    """Limits of this deployment that a line can be held to before it is published (capture holds records
    from other producers to them too): an oversize turn is refused here, not copied onto the log first."""
    if isinstance(event, TurnEvent) and (error := content_over_limit(event.content, settings.max_content_bytes)):
        raise DecodeError(error)
    if isinstance(event, ControlEvent) and (error := control_refusal(event)):
        raise DecodeError(error)  # every worker would dead-letter it
    return event


@dataclass
class IngestSummary:
    lines: int = 0
    published: int = 0
    dead_lettered_at_input: int = 0
    dead_lettered_in_pipeline: int = 0
    rejected: int = 0
    processed_records: int = 0
    resumed_after: int = 0
    """The line an interrupted ingest of the same file had published up to (0: started at the top)."""

    @property
    def dead_lettered(self) -> int:
        return self.dead_lettered_at_input + self.dead_lettered_in_pipeline


def read_line(text: str, settings: Settings) -> Event:
    """One input line → the event to publish, held to this deployment's limits; raises :class:`DecodeError`
    with the reason for anything else, whatever went wrong (one line never stops a file)."""
    try:
        return checked(parse_line(text), settings)
    except DecodeError:
        raise
    except UNANTICIPATED_VALUE_ERRORS as exc:
        raise DecodeError(f"{type(exc).__name__}: {exc}") from None


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of ``path`` with their 1-based numbers."""
    with InputReader(path) as reader:
        yield from reader.lines()


async def publish_file(
    bus: Bus,
    settings: Settings,
    path: Path,
    summary: IngestSummary,
    *,
    batch: int = 500,
    on_progress: Callable[[str, int], None] | None = None,
    marker: IngestMarker | None = None,
) -> None:
    """Publish every good line of ``path`` to its topic; bad lines go to the DLQ with their line number.
    With a ``marker``, start after the line an interrupted run published up to, and record progress."""
    pending: list[OutgoingRecord] = []

    async def flush(reader: InputReader) -> None:
        await publish_marked(bus, settings.topic_prefix, pending)  # control events: their turns
        summary.published += sum(1 for r in pending if not r.topic.endswith("dlq"))
        pending.clear()
        if marker is not None:
            marker.save(reader.position())
        if on_progress:
            on_progress("published", summary.published)

    with InputReader(path, marker.load() if marker is not None else None) as reader:
        summary.resumed_after = reader.resumed_after
        for lineno, text in reader.lines():
            summary.lines += 1
            try:
                pending.append(host_record(settings, read_line(text, settings), line=lineno))
            except DecodeError as exc:
                raw = text.encode("utf-8", errors="surrogateescape")
                pending.append(dead_letter_record(settings, None, stage="ingest", error=f"line {lineno}: {exc}",
                                                  original=raw, line=lineno, key=line_home(raw)))
                summary.dead_lettered_at_input += 1
                dead_lettered("ingest", "invalid_input")
            if len(pending) >= batch:
                await flush(reader)
        await flush(reader)


def line_home(raw: bytes) -> str | None:
    """The scope home a bad input line names, read leniently (bytes that are not UTF-8 replaced) as the sealer
    reads a record's owner: its dead letter is keyed, and so sealed, under that user, whose erasure shreds it.
    The sealer reads the owner from the dead letter's original where it can, but not from one kept only in part
    (a line over 256 KiB) or with escaped bytes."""
    owner = owner_of(raw.decode("utf-8", errors="replace"), None)
    return owner.home if owner is not None and owner.home else None


async def published_count(bus: Bus, topic: str) -> int:
    """How many records were ever published on ``topic`` (the sum of its partitions' end offsets)."""
    tps = [TopicPartition(topic, p) for p in range(await bus.partitions(topic))]
    return sum((await bus.end_offsets(tps)).values())


async def ingest_file(
    runtime: EmbeddedRuntime,
    path: Path,
    *,
    batch: int = 500,
    on_progress: Callable[[str, int], None] | None = None,
) -> IngestSummary:
    """Publish every good line to its topic, dead-letter bad ones, then run the pipeline until idle. An ingest
    of the same file that was interrupted is resumed after the last line it published."""
    summary = IngestSummary()
    settings = runtime.settings
    marker = IngestMarker(settings.data_dir, path)
    dlq_before = await published_count(runtime.log, topic_name(Topic.DLQ, settings.topic_prefix))
    rejected_before = count_rejections(runtime)
    await publish_file(runtime.log, settings, path, summary, batch=batch, on_progress=on_progress, marker=marker)
    summary.processed_records = await runtime.run_until_idle(
        progress=(lambda _k, n: on_progress("processed", n)) if on_progress else None
    )
    marker.clear()  # complete: a later run of the same file publishes it again
    dlq_after = await published_count(runtime.log, topic_name(Topic.DLQ, settings.topic_prefix))
    summary.dead_lettered_in_pipeline = dlq_after - dlq_before - summary.dead_lettered_at_input
    summary.rejected = count_rejections(runtime) - rejected_before
    return summary


def count_rejections(runtime: EmbeddedRuntime) -> int:
    return int(shard_counts(runtime.shards.data_dir)["rejected"])
