"""A stage waits until its partition is restored (issue 13). Found by a review: FaustRuntime._restored marked
a partition restored after it was revoked mid-restore, so when it came back (another worker wrote to it
meanwhile) stages read the stale shard. No broker: faust's consumer is replaced by a stand-in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from faust.types import TP

from altm.core import Settings, Topic, topic_name
from altm.pipeline.processors import ProcessorContext
from altm.pipeline.runtime.kafka import FaustRuntime
from altm.store import ShardSet


class _Consumer:
    def __init__(self, assigned: set[TP]) -> None:
        self.assigned = assigned

    def assignment(self) -> set[TP]:
        return set(self.assigned)

    async def position(self, tp: TP) -> int:
        return 10

    async def highwaters(self, *tps: TP) -> dict[TP, int]:
        return {tp: 10 for tp in tps}


async def test_a_partition_revoked_while_it_restores_is_restored_again_when_it_comes_back(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    shards = ShardSet(settings.data_dir, settings.partitions)
    runtime = FaustRuntime(settings, shards, ProcessorContext(settings=settings), [], "log-id")
    tp = TP(topic_name(Topic.PROPOSALS, settings.topic_prefix), 0)
    consumer = _Consumer({tp})
    runtime.app._consumer = consumer  # type: ignore[assignment]
    gate, calls = asyncio.Event(), []

    async def catch_up(partition: int, end: int) -> int:
        calls.append((partition, end))
        await gate.wait()  # reading the log takes a while (a new consumer per chunk)
        return 0

    async def flush(partition: int) -> None:
        return None

    runtime.writer.catch_up = catch_up  # type: ignore[method-assign]
    runtime.writer.flush = flush  # type: ignore[method-assign]
    restoring = asyncio.create_task(runtime._restored(0))  # the 2 s timer, or a stage's first record
    await asyncio.sleep(0)
    consumer.assigned = set()
    runtime._revoked(runtime.app, {tp}, signal=None)  # a rebalance takes partition 0 away meanwhile
    gate.set()
    await restoring
    consumer.assigned = {tp}  # ... and gives it back later, after another worker wrote to it
    await runtime._restored(0)
    shards.close()
    assert len(calls) == 2, f"partition 0 came back and was not restored again (ready: {runtime._ready})"


async def test_a_fetch_position_that_never_comes_does_not_stall_the_partition(tmp_path: Path,
                                                                             monkeypatch: Any) -> None:
    """faust's ``consumer.position`` loops until the partition has a valid fetch position; a stage waiting on
    the restore would wait with it (a partition stopped storing turns in one benchmark run; this is one way it
    can). After ``POSITION_WAIT_S`` the restore goes up to the log's end instead (what the writer's stream then
    delivers again is skipped by its offset)."""
    monkeypatch.setattr("altm.pipeline.runtime.kafka.POSITION_WAIT_S", 0.2)
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    shards = ShardSet(settings.data_dir, settings.partitions)
    runtime = FaustRuntime(settings, shards, ProcessorContext(settings=settings), [], "log-id")
    tp = TP(topic_name(Topic.PROPOSALS, settings.topic_prefix), 0)

    class _NoPosition(_Consumer):
        async def position(self, tp: TP) -> int:
            await asyncio.Event().wait()  # never
            return 0

    runtime.app._consumer = _NoPosition({tp})  # type: ignore[assignment]
    calls: list[tuple[int, int]] = []

    async def catch_up(partition: int, end: int) -> int:
        calls.append((partition, end))
        return 0

    async def flush(partition: int) -> None:
        return None

    runtime.writer.catch_up = catch_up  # type: ignore[method-assign]
    runtime.writer.flush = flush  # type: ignore[method-assign]
    await asyncio.wait_for(runtime._restored(0), 5)
    shards.close()
    assert calls == [(0, 10)] and 0 in runtime._ready  # restored up to the high watermark
