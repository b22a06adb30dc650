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
from ..streams.bus import OutgoingRecord, TopicPartition
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


async def copy_host_topics(source: Path, target: EmbeddedLog, prefix: str, partitions: int,
                           from_offset: int = 0, batch: int = 1000) -> int:
    """Host events of ``source`` into ``target``, partition by partition, in offset order."""
    log = EmbeddedLog(default_log_path(source), read_only=True)
    await log.start()
    copied = 0
    try:
        for topic in HOST_TOPICS:
            name = topic_name(topic, prefix)
            for p in range(partitions):
                tp = TopicPartition(name, p)
                offset = max(from_offset, log.log_start_offset(tp))
                while records := log.read(tp, offset, batch):
                    await target.publish_many([OutgoingRecord(r.topic, r.value, key=r.key, headers=r.headers,
                                                              partition=p) for r in records])
                    copied += len(records)
                    offset = records[-1].offset + 1
    finally:
        await log.stop()
    return copied


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
        events = await copy_host_topics(source, runtime.log, settings.topic_prefix, partitions, from_offset)
        if progress:
            progress("events", events)
        processed = await runtime.run_until_idle(progress=progress)
        return ReplaySummary(events, processed, time.perf_counter() - start)
    finally:
        await runtime.stop()
