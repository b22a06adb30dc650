"""Re-derivation: rebuild every derived store from the host topics of a log (turns and control events).

The log is the source of truth: reading its host topics (from either bus) into a fresh deployment and
running the pipeline (in the order the source's writer took them up, which its proposals log keeps) yields
the same derived state (``altm state-hash``), with model answers served from
the LLM cache when the target reuses one. :func:`altm.wiring.replay_into` opens the deployments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import orjson

from altm.bus import TURNS_END_HEADER, Bus, OutgoingRecord, Record, TopicPartition, event_ref_of, marked
from altm.bus.sealing import SEALED_BY_HEADER, SealedBus, is_shredded
from altm.core import Topic, topic_name
from altm.pipeline import EmbeddedRuntime

HOST_TOPICS = (Topic.TURNS, Topic.CONTROL)
Progress = Callable[[str, int], None]


@dataclass
class ReplaySummary:
    events: int  # host events applied
    records_processed: int
    seconds: float
    skipped: int = 0  # host records an erasure shredded: read, not applied

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


async def read_host_records(bus: Bus, prefix: str, *, from_offset: int = 0,
                            from_time: datetime | None = None) -> list[Record]:
    """Host events of ``bus`` up to their current ends, in the order they were first published (turns and
    control events interleaved by publication time), each partition's in the order they took effect where the
    source's proposals log tells it (:func:`_in_the_writers_order`).

    A start point is a point in time for both topics: ``from_time``, or, for ``from_offset``, the time the
    turns topic's record at that offset was published (the earliest over its partitions; turns are taken from
    that offset on). Offsets of one topic say nothing about the other, and an erasure published after the
    turns it erased must be replayed with them.

    The ends are one cut taken before anything is read (turns, control and proposals), so that what a host
    publishes while the replay reads (a live source) is left out of every topic alike: read topic by topic up to
    each one's end at its read, a pin published after the turn it names was replayed without that turn."""
    turns, control = (topic_name(t, prefix) for t in HOST_TOPICS)
    proposals = topic_name(Topic.PROPOSALS, prefix)
    count = await bus.partitions(turns)
    cut = await bus.end_offsets([TopicPartition(t, p) for t in (turns, control, proposals) for p in range(count)])

    def before_cut(records: list[Record]) -> list[Record]:
        return [r for r in records if r.offset < cut.get(TopicPartition(r.topic, r.partition), 0)]

    async def read(topic: str, *, from_offset: int = 0, from_time_ms: int | None = None) -> list[Record]:
        if isinstance(bus, SealedBus):  # with those whose key an erasure destroyed: where they were, and which
            return before_cut(await bus.read_all([topic], from_offset=from_offset, from_time_ms=from_time_ms,
                                                  keep_shredded=True))
        return before_cut(await bus.read_all([topic], from_offset=from_offset, from_time_ms=from_time_ms))

    if from_offset and from_time is None:
        turn_records = await read(turns, from_offset=from_offset)
        start_ms = min((r.timestamp_ms for r in turn_records), default=None)
        if start_ms is None:  # no turn at or after that offset: control events from the same offset on
            records = [*turn_records, *await read(control, from_offset=from_offset)]
        else:
            records = [*turn_records, *await read(control, from_time_ms=start_ms)]
    else:
        since = int(from_time.timestamp() * 1000) if from_time else None
        records = [*await read(turns, from_time_ms=since), *await read(control, from_time_ms=since)]
    records.sort(key=lambda r: (r.timestamp_ms, r.topic != turns, r.partition, r.offset))
    return await _in_the_writers_order(bus, prefix, records, before_cut)


async def _in_the_writers_order(bus: Bus, prefix: str, records: list[Record],
                                before_cut: Callable[[list[Record]], list[Record]]) -> list[Record]:
    """``records`` with each partition's host events in the order the source's writer applied the first
    proposal each of them caused (its proposals log says so), the others in their places. Published close
    together, a turn and a control event can take effect in the other order than they were published: the
    runtime takes the searchable path first, so a turn sent after a retention pass can be stored before the
    pass is applied, and the replay must do the same."""
    first: dict[str, tuple[int, int]] = {}
    for rec in before_cut(await bus.read_all([topic_name(Topic.PROPOSALS, prefix)])):
        cause = _field(rec, "cause_event_id")
        if cause is not None and cause not in first:
            first[cause] = (rec.partition, rec.offset)
    placed: dict[int, list[tuple[int, tuple[int, int]]]] = {}  # partition -> (index in records, applied at)
    for i, rec in enumerate(records):
        event_id = _field(rec, "event_id")
        if event_id is not None and event_id in first:
            placed.setdefault(rec.partition, []).append((i, first[event_id]))
    out = list(records)
    for slots in placed.values():
        for (slot, _), (i, _) in zip(slots, sorted(slots, key=lambda s: s[1]), strict=True):
            out[slot] = records[i]
    return out


def _field(record: Record, name: str) -> str | None:
    """A string field of the event ``record`` carries (None when it is not an event or has none)."""
    try:
        obj = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        return None
    value = obj.get(name) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


async def replay_records(runtime: EmbeddedRuntime, records: list[Record], prefix: str,
                         progress: Progress | None = None, shredded: Callable[[str], object] | None = None) -> int:
    """Publish host events in their original order. A control event (a decision about the state of its
    time) is applied once everything published before it has been derived, as it was originally; a retention
    pass that no longer opens (an erasure destroyed its key) is handed to ``shredded`` by its ref at that
    point (``altm.bus.EVENT_REF_HEADER``)."""
    control = topic_name(Topic.CONTROL, prefix)
    processed = 0
    pending: list[OutgoingRecord] = []

    async def publish() -> None:  # a control event's turns end is this log's (the source's offsets are not)
        await runtime.log.publish_many(await marked(runtime.log, prefix, pending))
        pending.clear()

    for rec in records:
        if rec.topic != control and is_shredded(rec):
            continue  # a turn an erasure shredded: nothing to apply (counted as skipped)
        if rec.topic == control:
            if pending:
                await publish()
            processed += await runtime.run_until_idle(progress=progress)
            if is_shredded(rec):  # nothing to apply: only where it was, and which it was
                if shredded is not None and (ref := event_ref_of(rec)) is not None:
                    shredded(ref)
                continue
        pending.append(OutgoingRecord(rec.topic, rec.value, key=rec.key, partition=rec.partition,
                                      headers=tuple(h for h in rec.headers
                                                    if h[0] not in (SEALED_BY_HEADER, TURNS_END_HEADER))))
        if rec.topic == control:
            await publish()
            processed += await runtime.run_until_idle(progress=progress)
    if pending:
        await publish()
    return processed + await runtime.run_until_idle(progress=progress)
