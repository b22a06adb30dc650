"""Re-derivation: rebuild every derived store from the host topics of a log (turns and control events).

The log is the source of truth: reading its host topics (from either bus) into a fresh deployment and
running the pipeline yields the same derived state (``altm state-hash``), with model answers served from
the LLM cache when the target reuses one. :func:`altm.wiring.replay_into` opens the deployments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from altm.bus import Bus, OutgoingRecord, Record
from altm.bus.sealing import SEALED_BY_HEADER
from altm.core import Topic, topic_name
from altm.pipeline import EmbeddedRuntime

HOST_TOPICS = (Topic.TURNS, Topic.CONTROL)
Progress = Callable[[str, int], None]


@dataclass
class ReplaySummary:
    events: int
    records_processed: int
    seconds: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


async def read_host_records(bus: Bus, prefix: str, *, from_offset: int = 0,
                            from_time: datetime | None = None) -> list[Record]:
    """Host events of ``bus`` up to their current ends, in the order they were first published (turns and
    control events interleaved by publication time).

    A start point is a point in time for both topics: ``from_time``, or, for ``from_offset``, the time the
    turns topic's record at that offset was published (the earliest over its partitions; turns are taken from
    that offset on). Offsets of one topic say nothing about the other, and an erasure published after the
    turns it erased must be replayed with them."""
    turns, control = (topic_name(t, prefix) for t in HOST_TOPICS)
    if from_offset and from_time is None:
        turn_records = await bus.read_all([turns], from_offset=from_offset)
        start_ms = min((r.timestamp_ms for r in turn_records), default=None)
        if start_ms is None:  # no turn at or after that offset: control events from the same offset on
            controls = await bus.read_all([control], from_offset=from_offset)
        else:
            controls = await bus.read_all([control], from_time_ms=start_ms)
        records = [*turn_records, *controls]
    else:
        records = await bus.read_all([turns, control], from_time_ms=int(from_time.timestamp() * 1000)
                                     if from_time else None)
    records.sort(key=lambda r: (r.timestamp_ms, r.topic != turns, r.partition, r.offset))
    return records


async def replay_records(runtime: EmbeddedRuntime, records: list[Record], prefix: str,
                         progress: Progress | None = None) -> int:
    """Publish host events in their original order. A control event (a decision about the state of its
    time) is applied once everything published before it has been derived, as it was originally."""
    control = topic_name(Topic.CONTROL, prefix)
    processed = 0
    pending: list[OutgoingRecord] = []
    for rec in records:
        if rec.topic == control:
            if pending:
                await runtime.log.publish_many(pending)
                pending = []
            processed += await runtime.run_until_idle(progress=progress)
        pending.append(OutgoingRecord(rec.topic, rec.value, key=rec.key, partition=rec.partition,
                                      headers=tuple(h for h in rec.headers if h[0] != SEALED_BY_HEADER)))
        if rec.topic == control:
            await runtime.log.publish_many(pending)
            pending = []
            processed += await runtime.run_until_idle(progress=progress)
    if pending:
        await runtime.log.publish_many(pending)
    return processed + await runtime.run_until_idle(progress=progress)
