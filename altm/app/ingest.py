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

from altm.bus import Bus, OutgoingRecord, dead_letter_record, host_record
from altm.core import (
    ControlEvent,
    DecodeError,
    Event,
    TurnEvent,
    decode_event,
    describe_validation_error,
)
from altm.core.bounds import content_over_limit
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline import EmbeddedRuntime
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
    return event


@dataclass
class IngestSummary:
    lines: int = 0
    published: int = 0
    dead_lettered_at_input: int = 0
    dead_lettered_in_pipeline: int = 0
    rejected: int = 0
    processed_records: int = 0

    @property
    def dead_lettered(self) -> int:
        return self.dead_lettered_at_input + self.dead_lettered_in_pipeline


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", errors="surrogateescape") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield lineno, line.rstrip("\n")


async def publish_file(
    bus: Bus,
    settings: Settings,
    path: Path,
    summary: IngestSummary,
    *,
    batch: int = 500,
    on_progress: Callable[[str, int], None] | None = None,
) -> None:
    """Publish every good line of ``path`` to its topic; bad lines go to the DLQ with their line number."""
    pending: list[OutgoingRecord] = []

    async def flush() -> None:
        await bus.publish_many(pending)
        summary.published += sum(1 for r in pending if not r.topic.endswith("dlq"))
        pending.clear()
        if on_progress:
            on_progress("published", summary.published)

    for lineno, text in iter_lines(path):
        summary.lines += 1
        try:
            pending.append(host_record(settings, checked(parse_line(text), settings), line=lineno))
        except (DecodeError, ValueError, OverflowError, RecursionError, TypeError) as exc:
            # DecodeError is the expected case; the others are values no validator anticipated: this line is
            # dead-lettered all the same and the file goes on
            reason = str(exc) if isinstance(exc, DecodeError) else f"{type(exc).__name__}: {exc}"
            raw = text.encode("utf-8", errors="surrogateescape")
            pending.append(dead_letter_record(settings, None, stage="ingest", error=f"line {lineno}: {reason}",
                                              original=raw, line=lineno))
            summary.dead_lettered_at_input += 1
        if len(pending) >= batch:
            await flush()
    if pending:
        await flush()


async def ingest_file(
    runtime: EmbeddedRuntime,
    path: Path,
    *,
    batch: int = 500,
    on_progress: Callable[[str, int], None] | None = None,
) -> IngestSummary:
    """Publish every good line to its topic, dead-letter bad ones, then run the pipeline until idle."""
    summary = IngestSummary()
    settings = runtime.settings
    dlq_before = runtime.log.count(topic_name(Topic.DLQ, settings.topic_prefix))
    rejected_before = count_rejections(runtime)
    await publish_file(runtime.log, settings, path, summary, batch=batch, on_progress=on_progress)
    summary.processed_records = await runtime.run_until_idle(
        progress=(lambda _k, n: on_progress("processed", n)) if on_progress else None
    )
    dlq_after = runtime.log.count(topic_name(Topic.DLQ, settings.topic_prefix))
    summary.dead_lettered_in_pipeline = dlq_after - dlq_before - summary.dead_lettered_at_input
    summary.rejected = count_rejections(runtime) - rejected_before
    return summary


def count_rejections(runtime: EmbeddedRuntime) -> int:
    return int(shard_counts(runtime.shards.data_dir)["rejected"])
