"""The read replica keeps following: it retries what its writer's guard deferred (as the workers do), and a
record it cannot open yet is tried again instead of ending its task (found by a review: both were lost, the
second silently, with the service answering from a replica that no longer moved)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from altm.bus import Record
from altm.core import Settings, Topic, encode, partition_for, topic_name
from altm.pipeline.processors import CaptureProcessor, ProcessorContext
from altm.pipeline.runtime.replica import ReplicaRuntime
from altm.store import ShardSet
from tests.support.rows import rows
from tests.support.turns import make_turn


class _Log:
    def __init__(self, records: list[Record]) -> None:
        self.records = records

    async def start(self, starts: Mapping[int, int]) -> None:
        self.records = [r for r in self.records if r.offset >= starts.get(r.partition, 0)]

    async def stop(self) -> None:
        return None

    async def poll(self, timeout_s: float = 0.5) -> list[Record]:
        out, self.records = self.records, []
        if not out:
            await asyncio.sleep(0.05)
        return out


async def test_a_proposal_the_replicas_guard_deferred_is_applied_later(settings: Settings) -> None:
    settings = settings.model_copy(update={"defer_backoff_s": 0.1})
    topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    (prop,) = await CaptureProcessor().process(make_turn(1), ProcessorContext(settings=settings))
    rec = Record(topic, partition_for(prop.key, settings.partitions), 0, prop.key, encode(prop))
    shards = ShardSet(settings.data_dir, settings.partitions)
    replica = ReplicaRuntime(settings, shards, _Log([rec]))
    guard = replica.writer.guard
    calls = {"n": 0}
    real = guard._tombstone

    def flaky(tx: Any, mem: Any, *, label: bool = False) -> Any:  # the guard fails once (a locked key store...)
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("transient")
        return real(tx, mem, label=label)

    guard._tombstone = flaky  # type: ignore[method-assign]
    replica.RETRY_DEFERRED_S = 0.2
    await replica.start("test-log")
    try:
        for _ in range(100):
            if calls["n"] >= 2 and not rows(settings.data_dir, "SELECT 1 FROM deferred_work"):
                break
            await asyncio.sleep(0.1)
    finally:
        await replica.stop()
        shards.close()
    assert rows(settings.data_dir, "SELECT 1 FROM deferred_work") == [] and rows(
        settings.data_dir, "SELECT 1 FROM memories"), "deferred on the replica, never retried"


async def test_the_replica_keeps_following_after_opening_a_record_fails(settings: Settings) -> None:
    """``sealer.open`` runs outside the try in ``_follow``: one failure (the shared SQLite key store locked
    for longer than its busy timeout, a key from another key store) ends the task silently, and the service
    goes on answering from a replica that no longer moves."""
    topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    (prop,) = await CaptureProcessor().process(make_turn(1), ProcessorContext(settings=settings))
    rec = Record(topic, partition_for(prop.key, settings.partitions), 0, prop.key, encode(prop))

    class _Sealer:
        calls = 0

        def open(self, record: Record, *, retired: bool = True) -> Record:
            _Sealer.calls += 1
            if _Sealer.calls == 1:
                raise RuntimeError("database is locked")
            return record

    class _Twice(_Log):
        async def poll(self, timeout_s: float = 0.5) -> list[Record]:
            await asyncio.sleep(0.05)
            return [rec]  # the reader hands the record again until it is applied

    shards = ShardSet(settings.data_dir, settings.partitions)
    replica = ReplicaRuntime(settings, shards, _Twice([]), sealer=_Sealer())  # type: ignore[arg-type]
    await replica.start("test-log")
    await asyncio.sleep(0.5)
    task = replica._task
    try:
        assert task is not None and not task.done(), f"the replica's follow task died: {task}"
    finally:
        await replica.stop() if task is not None and not task.done() else None
        shards.close()
