"""Re-derivation: rebuild every derived store from the host topics of a log (turns and control events).

The log is the source of truth: copying its host topics into a fresh data dir and running the pipeline
yields the same derived state (``altm state-hash``), with model answers served from the LLM cache when the
target reuses one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..streams.bus import OutgoingRecord, Record, TopicPartition
from ..streams.bus.embedded import EmbeddedLog, default_log_path
from ..streams.runtime import EmbeddedRuntime
from ..streams.topics import Topic, topic_name
from .stats import DataDirError, log_topics

HOST_TOPICS = (Topic.TURNS, Topic.CONTROL)


@dataclass
class ReplaySummary:
    events: int
    records_processed: int
    seconds: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


async def read_host_records(source: Path, prefix: str, partitions: int, from_offset: int = 0,
                            batch: int = 1000) -> list[Record]:
    """Host events of ``source``, in the order they were first published (turns and control interleaved)."""
    log = EmbeddedLog(default_log_path(source), read_only=True)
    await log.start()
    out: list[Record] = []
    try:
        for topic in HOST_TOPICS:
            name = topic_name(topic, prefix)
            for p in range(partitions):
                tp = TopicPartition(name, p)
                offset = max(from_offset, log.log_start_offset(tp))
                while records := log.read(tp, offset, batch):
                    out += records
                    offset = records[-1].offset + 1
    finally:
        await log.stop()
    out.sort(key=lambda r: (r.timestamp_ms, r.topic != topic_name(Topic.TURNS, prefix), r.partition, r.offset))
    return out


async def replay_records(runtime: EmbeddedRuntime, records: list[Record], prefix: str,
                         progress: Callable[[str, int], None] | None = None) -> int:
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
        pending.append(OutgoingRecord(rec.topic, rec.value, key=rec.key, headers=rec.headers,
                                      partition=rec.partition))
        if rec.topic == control:
            await runtime.log.publish_many(pending)
            pending = []
            processed += await runtime.run_until_idle(progress=progress)
    if pending:
        await runtime.log.publish_many(pending)
    return processed + await runtime.run_until_idle(progress=progress)


async def replay_into(source: Path, target: Path, *, from_offset: int = 0,
                      progress: Callable[[str, int], None] | None = None) -> ReplaySummary:
    if target.exists() and any(target.iterdir()):
        raise DataDirError(f"{target} is not empty: replay rebuilds into a fresh data dir")
    settings = Settings(data_dir=source)
    partitions, _ = log_topics(source, settings.topic_prefix)
    runtime = EmbeddedRuntime(settings.model_copy(update={"data_dir": target, "partitions": partitions}))
    await runtime.start()
    try:
        start = time.perf_counter()
        records = await read_host_records(source, settings.topic_prefix, partitions, from_offset)
        if progress:
            progress("events", len(records))
        processed = await replay_records(runtime, records, settings.topic_prefix, progress)
        return ReplaySummary(len(records), processed, time.perf_counter() - start)
    finally:
        await runtime.stop()
