"""A history played embedded, then sent to Kafka and applied by workers in this process: the harness of the tests
that hold a Kafka worker, a shard it restored, a standby copy or a read replica against the embedded runtime."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from altm.app.replay import read_host_records
from altm.bus import TURNS_END_HEADER, OutgoingRecord, publish_marked
from altm.bus._order import _ordering
from altm.bus.kafka import KafkaBus
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext, default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.store import MemoryReader, ShardSet
from altm.wiring._adapters import guard_similarity, open_bus, open_sealer, resolve
from altm.wiring._worker import prepare_kafka
from tests.support.workers import wait_until_idle


def sealed_settings(data_dir: Path, grace_s: float = 0.0, *, keystore: Path | None = None) -> Settings:
    """Four partitions, no embedder; the log sealed with ``keystore`` (none: in the clear)."""
    return Settings(data_dir=data_dir, partitions=4, embedder="none", retired_key_grace_s=grace_s,
                    seal_log=keystore is not None, keystore=f"sqlite:///{keystore}" if keystore is not None else None)


async def host_records(source: Settings) -> list[OutgoingRecord]:
    """The host events of an embedded deployment's log, in the order its writer took them up."""
    origin = resolve(source)
    bus = open_bus(origin, read_only=True)
    await bus.start()
    try:
        records = await read_host_records(bus, origin.topic_prefix)
    finally:
        await bus.stop()
    return [OutgoingRecord(r.topic, r.value, r.key, tuple(h for h in r.headers if h[0] != TURNS_END_HEADER))
            for r in records]


async def send(bootstrap: str, prefix: str, records: list[OutgoingRecord], source_prefix: str,
               data_dir: Path | None = None) -> None:
    """The host events on Kafka under ``prefix`` (control events marked). With ``data_dir``, as they were sent:
    a control event that does not order derivation (feedback, a compaction pass) once the worker of that data dir
    is idle (after what it names was derived); without, all at once."""
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        turns = topic_name(Topic.TURNS, source_prefix)
        batch: list[OutgoingRecord] = []
        for r in records:
            kind = Topic.TURNS if r.topic == turns else Topic.CONTROL
            rec = OutgoingRecord(topic_name(kind, prefix), r.value, r.key, r.headers)
            if data_dir is not None and kind is Topic.CONTROL and not _ordering(rec):
                await publish_marked(bus, prefix, batch)
                batch = []
                await wait_until_idle(bootstrap, prefix, data_dir=data_dir)
            batch.append(rec)
        await publish_marked(bus, prefix, batch)
    finally:
        await bus.stop()


@asynccontextmanager
async def worker(settings: Settings) -> AsyncIterator[KafkaRuntime]:
    """One worker in this process, built as ``altm worker`` builds it (sealed, the shared key store)."""
    settings = resolve(settings)
    identity = await prepare_kafka(settings)
    shards = ShardSet(settings.data_dir, settings.partitions)
    sealer = open_sealer(settings)
    runtime = KafkaRuntime(settings, shards, ProcessorContext(settings=settings, reader=MemoryReader(shards)),
                           default_processors(), identity, sealer, guard_similarity(settings))
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
        shards.close()
        if sealer is not None:
            sealer.keys.close()


def applied(data_dir: Path, partition: int) -> int:
    """The next proposals offset the shard of ``partition`` in ``data_dir`` stored (what it has applied)."""
    path = data_dir / "shards" / f"shard-{partition:04d}.db"
    if not path.exists():
        return -1
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT MAX(next_offset) FROM consumer_offsets WHERE topic LIKE '%proposals'").fetchone()
        return int(row[0] or 0)
    except sqlite3.OperationalError:  # being made
        return -1
    finally:
        conn.close()


async def until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    for _ in range(int(timeout_s * 4)):
        if condition():
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"not within {timeout_s} s: {what}")
