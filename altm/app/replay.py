"""Re-derivation: rebuild every derived store from the host topics of a log (turns and control events).

The log is the source of truth: copying its host topics into a fresh data dir and running the pipeline
yields the same derived state (``altm state-hash``), with model answers served from the LLM cache when the
target reuses one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from altm.app.stats import DataDirError, log_topics
from altm.bus import OutgoingRecord, Record, TopicPartition
from altm.bus.embedded import EmbeddedLog, default_log_path
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.core.topics import Topic, topic_name
from altm.pipeline.runtime import EmbeddedRuntime
from altm.store import ShardSet

HOST_TOPICS = (Topic.TURNS, Topic.CONTROL)


@dataclass
class ReplaySummary:
    events: int
    records_processed: int
    seconds: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0



def _require_empty(target: Path) -> None:
    if target.exists() and any(target.iterdir()):
        raise DataDirError(f"{target} is not empty: replay rebuilds into a fresh data dir")

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


async def replay_into(source: Path, target: Path, *, from_offset: int = 0, reuse_cache: bool = True,
                      progress: Callable[[str, int], None] | None = None) -> ReplaySummary:
    settings = Settings(data_dir=source)
    partitions, _ = log_topics(source, settings.topic_prefix)
    start = time.perf_counter()
    records = await read_host_records(source, settings.topic_prefix, partitions, from_offset)
    # model answers come from the source's cache: a replay costs no model calls
    return await _rebuild(settings, target, partitions, records, source if reuse_cache else None, start, progress)


async def _rebuild(settings: Settings, target: Path, partitions: int, records: list[Record],
                   cache_from: Path | None, start: float,
                   progress: Callable[[str, int], None] | None) -> ReplaySummary:
    """Run the embedded pipeline over ``records`` in a fresh data dir, optionally with a reused LLM cache."""
    _require_empty(target)
    runtime = EmbeddedRuntime(settings.model_copy(update={"data_dir": target, "partitions": partitions}))
    await runtime.start()
    try:
        if cache_from is not None:
            copy_llm_cache(cache_from, runtime.shards)
        if progress:
            progress("events", len(records))
        processed = await replay_records(runtime, records, settings.topic_prefix, progress)
        return ReplaySummary(len(records), processed, time.perf_counter() - start)
    finally:
        await runtime.stop()


async def read_kafka_host_records(broker: str, prefix: str, *, from_offset: int = 0,
                                  from_time: datetime | None = None) -> tuple[int, list[Record]]:
    """Host events of the Kafka topics up to their current end, in the order they were published."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as KafkaTP

    from altm.bus.kafka import parse_broker_url

    consumer = AIOKafkaConsumer(bootstrap_servers=parse_broker_url(broker), enable_auto_commit=False)
    await consumer.start()
    out: list[Record] = []
    try:
        tps = []
        for topic in HOST_TOPICS:
            name = topic_name(topic, prefix)
            parts = consumer.partitions_for_topic(name) or set()
            if not parts:
                await consumer._client.force_metadata_update()
                parts = consumer.partitions_for_topic(name) or set()
            if not parts:
                raise DataDirError(f"no topic {name} on {broker}")
            tps += [KafkaTP(name, p) for p in sorted(parts)]
        partitions = len({tp.partition for tp in tps if tp.topic == topic_name(Topic.TURNS, prefix)})
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        starts: dict[Any, int] = {tp: from_offset for tp in tps}
        if from_time is not None:
            found = await consumer.offsets_for_times({tp: int(from_time.timestamp() * 1000) for tp in tps})
            starts = {tp: (found[tp].offset if found.get(tp) else ends[tp]) for tp in tps}
        for tp in tps:
            consumer.seek(tp, starts[tp])
        remaining = {tp for tp in tps if starts[tp] < ends[tp]}
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=1000)
            for tp, msgs in batch.items():
                for m in msgs:
                    if m.offset < ends[tp]:
                        out.append(Record(m.topic, m.partition, m.offset, m.key.decode() if m.key else None,
                                          m.value or b"", tuple((k, bytes(v)) for k, v in (m.headers or ())),
                                          m.timestamp))
                if msgs and msgs[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await consumer.stop()
    out.sort(key=lambda r: (r.timestamp_ms, r.topic != topic_name(Topic.TURNS, prefix), r.partition, r.offset))
    return partitions, out


def copy_llm_cache(source: Path, target_shards: ShardSet) -> int:
    """Model answers cached in ``source``'s shards, into the target's (routed by the entry's home)."""
    copied = 0
    for path in sorted((source / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT model, prompt_hash, home, response, recorded_at FROM llm_cache").fetchall()
        finally:
            conn.close()
        for model, phash, home, response, at in rows:
            shard = target_shards.get(partition_for(home, target_shards.partitions))
            shard.conn.execute("INSERT OR IGNORE INTO llm_cache (model, prompt_hash, home, response, recorded_at) "
                               "VALUES (?,?,?,?,?)", (model, phash, home, response, at))
            copied += 1
    return copied


async def replay_from_kafka(broker: str, target: Path, *, settings: Settings | None = None,
                            from_offset: int = 0, from_time: datetime | None = None,
                            cache_from: Path | None = None,
                            progress: Callable[[str, int], None] | None = None) -> ReplaySummary:
    """Rebuild derived state from the Kafka topics into a fresh data dir (embedded pipeline)."""
    _require_empty(target)
    base = settings or Settings()
    start = time.perf_counter()
    partitions, records = await read_kafka_host_records(broker, base.topic_prefix, from_offset=from_offset,
                                                        from_time=from_time)
    return await _rebuild(base, target, partitions, records, cache_from, start, progress)
