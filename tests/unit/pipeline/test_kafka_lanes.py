"""The Kafka runtime's lanes and offsets (issue 13), without a broker: the group member is a stand-in.

Found by benchmark runs of the faust runtime this replaced: around a group rebalance, offsets were committed
past records no stage had handled (30-60 turns never stored, every lag 0), and one partition stopped being
consumed. Here: a lane counts a batch as handled only once every driver returned; a rebalance starts no new
batch of a revoked partition, waits for the one in flight (or cancels it: not handled), commits exactly what was
handled and keeps nothing queued; a partition's commit is the least of what its lanes handled."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.bus import BusError, Record, TopicPartition
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline._drivers import StageDriver
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime, Lane, lanes_of
from altm.store import DeferredWork, ShardSet
from tests.support.lanes import Member as _Member
from tests.support.lanes import records as _records
from tests.support.lanes import until as _until


class _Driver:
    """A stage stand-in: records what it handled; waits on ``gate`` when given; can be told to give up."""

    def __init__(self, name: str, *, gate: asyncio.Event | None = None, cancel: bool = False,
                 delay_s: float = 0.0) -> None:
        self.name, self.gate, self.cancel, self.delay_s = name, gate, cancel, delay_s
        self.handled: list[tuple[int, int]] = []
        self.log: list[str] = []

    def wants(self, record: Record) -> bool:
        return True

    async def handle(self, records: Sequence[Record]) -> int:
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(self.delay_s)
        except asyncio.CancelledError:
            self.log.append("cancelled")
            raise
        if self.cancel:
            raise asyncio.CancelledError  # e.g. a producer future cancelled under it: not an Exception
        self.handled += [(r.partition, r.offset) for r in records]
        self.log.append("finished")
        return len(records)


def _lane(*drivers: Any, batch: int = 10, ready: Any = None, opener: Any = None) -> Lane:
    return Lane("altm.changes", drivers, batch=batch, opener=opener or (lambda rec, ds: rec),
                ready=ready or (lambda partition: True))


def test_the_deriving_stages_of_the_changes_topic_share_a_lane(settings: Settings) -> None:
    """... and embed has one of its own, or none when it has no embedder (it would skip every change)."""
    shards = ShardSet(settings.data_dir, settings.partitions)

    async def publish(records: Sequence[Any]) -> None:
        return None

    def groups(embedder: bool) -> list[list[str]]:
        processors = default_processors(*((None, object(), object()) if embedder else ()))
        stages = [StageDriver(p, ProcessorContext(settings=settings), DeferredWork(shards, settings), publish)
                  for p in processors]
        return [[s.name for s in group] for group in lanes_of(stages)]

    assert groups(True)[0] == ["fold", "extract", "link", "verify", "govern"]
    assert sorted(groups(True)[1:]) == [["capture"], ["control"], ["embed"], ["lifecycle"], ["sweep"]]
    assert sorted(groups(False)[1:]) == [["capture"], ["control"], ["lifecycle"], ["sweep"]]
    shards.close()


async def test_a_batch_counts_as_handled_only_once_every_driver_returned() -> None:
    gate = asyncio.Event()
    fast, slow = _Driver("fast"), _Driver("slow", gate=gate)
    lane = _lane(fast, slow, batch=5)
    lane.start()
    lane.put(0, _records(0, range(0, 5)))
    await _until(lambda: fast.handled)
    assert lane.done == {}  # one driver is still on it
    gate.set()
    await _until(lambda: lane.done == {0: 5})
    await lane.stop(1.0)


async def test_a_driver_that_gives_up_takes_its_lane_with_it() -> None:
    """One stage's cancellation cancels its sibling before the batch ends: never left running, detached."""
    a, b = _Driver("a", cancel=True), _Driver("b", delay_s=0.3)
    lane = _lane(a, b)
    lane.start()
    lane.put(0, _records(0, range(3, 6)))
    await _until(lambda: "cancelled" in b.log)
    await asyncio.sleep(0.4)
    assert "finished" not in b.log and lane.done == {}  # nothing counted as handled
    await lane.stop(1.0)


async def test_a_rebalance_waits_for_the_batch_in_flight_and_drops_what_is_queued() -> None:
    gate = asyncio.Event()
    driver = _Driver("d", gate=gate)
    lane = _lane(driver, batch=4)
    lane.start()
    lane.put(0, _records(0, range(0, 10)))
    lane.put(1, _records(1, range(0, 2)))
    await _until(lambda: lane._current is not None)
    settling = asyncio.create_task(lane.settle({0, 1}, timeout_s=5.0))
    await asyncio.sleep(0.05)
    assert not settling.done()  # waits for the batch in flight
    lane.put(0, _records(0, range(10, 12)))  # fetched meanwhile: not queued any more
    gate.set()
    await settling
    handled = dict(lane.done)
    lane.forget({0, 1})
    await asyncio.sleep(0.05)
    assert driver.handled and len(driver.handled) == 4  # the batch in flight, nothing after it
    assert handled == {p: max(o for q, o in driver.handled if q == p) + 1 for p, _ in driver.handled}
    assert lane.done == {} and lane.backlog() == 0
    lane.put(0, _records(0, range(4, 6)))  # given back later: handled from what was committed
    await _until(lambda: lane.done == {0: 6})
    await lane.stop(1.0)


async def test_a_batch_that_outlasts_the_rebalance_wait_is_cancelled_and_not_counted() -> None:
    driver = _Driver("d", gate=asyncio.Event())  # never opens
    lane = _lane(driver)
    lane.start()
    lane.put(2, _records(2, range(0, 3)))
    await _until(lambda: lane._current is not None)
    await lane.settle({2}, timeout_s=0.1)
    assert "cancelled" in driver.log and lane.done == {}
    await lane.stop(1.0)


async def test_a_partition_waits_until_it_is_ready() -> None:
    ready: set[int] = set()
    driver = _Driver("d")
    lane = _lane(driver, ready=lambda p: p in ready)
    lane.start()
    lane.put(0, _records(0, range(0, 3)))
    lane.put(1, _records(1, range(0, 3)))
    ready.add(1)
    lane.wake()
    await _until(lambda: lane.done == {1: 3})
    assert all(p == 1 for p, _ in driver.handled)
    ready.add(0)
    lane.wake()
    await _until(lambda: lane.done == {0: 3, 1: 3})
    await lane.stop(1.0)


async def test_a_batch_that_cannot_be_opened_is_retried_and_nothing_after_it_is_skipped(monkeypatch: Any) -> None:
    """A record sealed with a key store this worker does not have: the lane stops there, loudly, and goes on
    from the same record once it opens; it never counts later records as handled past it."""
    monkeypatch.setattr("altm.pipeline.runtime.kafka._lane.FIRST_RETRY_S", 0.01)
    failures = [2]

    def opener(rec: Record, drivers: Any) -> Record:
        if failures[0] and rec.offset == 1:
            failures[0] -= 1
            raise RuntimeError("no such key in this key store")
        return rec

    driver = _Driver("d")
    lane = _lane(driver, batch=2, opener=opener)
    lane.start()
    lane.put(0, _records(0, range(0, 4)))
    await _until(lambda: lane.done.get(0) == 4)
    assert [o for _, o in driver.handled] == [0, 1, 2, 3]
    await lane.stop(1.0)


def _restores(runtime: Any, gate: asyncio.Event | None = None) -> list[tuple[int, int]]:
    """The writer's restore replaced by one that records (partition, end) and waits for ``gate``."""
    calls: list[tuple[int, int]] = []

    async def catch_up(partition: int, end: int) -> int:
        calls.append((partition, end))
        if gate is not None:
            await gate.wait()
        return 0

    async def flush(partition: int) -> None:
        return None

    runtime.writer.catch_up = catch_up
    runtime.writer.flush = flush
    return calls


@pytest.fixture
def runtime(tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    shards = ShardSet(settings.data_dir, settings.partitions)
    processors = [p for p in default_processors() if p.input_topic is Topic.CHANGES]
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), processors, "log-id")
    yield rt
    shards.close()


def test_a_partition_commits_the_least_of_what_its_lanes_handled(runtime: Any) -> None:
    changes = topic_name(Topic.CHANGES, runtime.settings.topic_prefix)
    lanes = [lane for lane in runtime.lanes if lane.topic == changes]
    assert len(lanes) == 1 and runtime._by_topic[changes] == lanes
    second = _lane(_Driver("other"))
    second.topic = changes
    runtime._by_topic[changes].append(second)
    tp0, tp1 = TopicPartition(changes, 0), TopicPartition(changes, 1)
    lanes[0].done.update({0: 40, 1: 7})
    second.done.update({0: 25})
    assert runtime.committable(frozenset({tp0, tp1})) == {tp0: 25}  # partition 1: one lane handled nothing
    runtime._committed[tp0] = 25
    assert runtime.committable(frozenset({tp0})) == {}  # nothing new


async def test_a_revocation_commits_what_was_handled_and_keeps_nothing_queued(runtime: Any) -> None:
    changes = topic_name(Topic.CHANGES, runtime.settings.topic_prefix)
    tp = TopicPartition(changes, 0)
    member = _Member({tp})
    runtime._member = member
    await runtime.assigned(frozenset({tp}))
    lane = runtime._by_topic[changes][0]
    lane.done[0] = 12
    lane.put(0, _records(0, range(12, 20), topic=changes))  # queued, never started (the lane is not running)
    await runtime.revoked(frozenset({tp}))
    assert member.commits == [{tp: 12}]
    assert lane.backlog() == 0 and lane.done == {}


async def test_a_partition_revoked_while_it_restores_is_restored_again_when_it_comes_back(runtime: Any) -> None:
    """Found by a review of the faust runtime, kept: a partition marked restored after it was revoked
    mid-restore would, when it came back (another worker wrote to it meanwhile), let stages read a stale shard."""
    tp = TopicPartition(topic_name(Topic.PROPOSALS, runtime.settings.topic_prefix), 0)
    member = _Member({tp})
    runtime._member = member
    gate = asyncio.Event()
    calls = _restores(runtime, gate)  # reading the log takes a while
    await runtime.assigned(frozenset({tp}))
    restoring = asyncio.create_task(runtime._restored(0))
    await asyncio.sleep(0)
    member.assigned = set()
    await runtime.revoked(frozenset({tp}))  # a rebalance takes partition 0 away meanwhile
    gate.set()
    await restoring
    assert 0 not in runtime._ready
    member.assigned = {tp}  # ... and gives it back later, after another worker wrote to it
    await runtime.assigned(frozenset({tp}))
    await runtime._restored(0)
    assert calls == [(0, 10), (0, 10)] and 0 in runtime._ready  # restored up to the group's committed offset


# -- from a review of the lane runtime (each failed before its fix) ----------------------------------------
#
# Defects a review of the aiokafka lane runtime found (issue 13), each a test that failed before its fix:
# a batch a driver cancelled by itself was dropped and later records committed past it; a partition restored
# while the group joined stayed ready when it came back; the deriving lane waited on turns of a partition not
# restored yet; one record that could not be opened stopped the lane on every partition; one partition's failing
# restore kept the others waiting. Stand-ins, no broker.


@pytest.fixture
def full_runtime(tmp_path: Path) -> Any:
    """Every default stage (capture too), no broker."""
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    yield rt
    shards.close()


class _CancelsOnce(_Driver):
    """A driver whose first batch ends in a CancelledError of its own (the case the lane's comment and
    test_a_driver_that_gives_up_takes_its_lane_with_it name: a producer future cancelled under it)."""

    def __init__(self) -> None:
        super().__init__("d")
        self.calls = 0

    async def handle(self, records: Sequence[Record]) -> int:
        self.calls += 1
        if self.calls == 1:
            raise asyncio.CancelledError
        return await super().handle(records)


async def test_a_batch_a_driver_cancels_by_itself_is_never_skipped() -> None:
    """Loss: the lane swallows the CancelledError (not a rebalance, not a stop), drops the batch without
    requeueing it, and goes on with the next records: done[p] then moves past records never handled, and the
    runtime commits it."""
    driver = _CancelsOnce()
    lane = _lane(driver, batch=3)
    lane.start()
    lane.put(0, _records(0, range(0, 3)))
    await _until(lambda: driver.calls >= 1)
    lane.put(0, _records(0, range(3, 6)))
    await _until(lambda: lane.done.get(0) == 6)
    try:
        assert [o for _, o in driver.handled] == [0, 1, 2, 3, 4, 5], "done[0] == 6 but offsets 0..2 never handled"
    finally:
        await lane.stop(1.0)


async def test_a_partition_restored_during_the_join_is_restored_again_when_it_comes_back(runtime: Any) -> None:
    """aiokafka keeps the previous assignment (consumer.assignment()) from on_partitions_revoked until the new
    one is in (Subscription._assign). The 2 s restore timer ticking in that window restores a revoked partition
    and marks it ready (the epoch it read is the post-revoke one). If the join gives the partition to another
    worker, the next rebalance's revoked() does not name it (not in this worker's previous assignment), so
    _ready keeps it: when it comes back after the other worker wrote to it, stages read the stale shard."""
    tp = TopicPartition(topic_name(Topic.PROPOSALS, runtime.settings.topic_prefix), 0)
    member = _Member({tp})
    runtime._member = member
    calls = _restores(runtime)
    await runtime.assigned(frozenset({tp}))
    runtime._ready.add(0)
    await runtime.revoked(frozenset({tp}))  # rebalance 1: revoked; aiokafka still reports the old assignment
    await runtime._restore_owned()  # the restore timer ticks while the group joins
    assert calls == [] and 0 not in runtime._ready  # not this worker's while the group joins
    member.assigned = set()  # the join gives partition 0 to another worker
    await runtime.assigned(frozenset())
    await runtime.revoked(frozenset())  # rebalance 2: this worker owned nothing
    member.assigned = {tp}  # partition 0 comes back, after the other worker wrote to it
    await runtime.assigned(frozenset({tp}))
    await runtime._restore_owned()
    assert calls == [(0, 10)] and 0 in runtime._ready, "partition 0 came back marked ready, never restored"


async def test_the_deriving_lane_is_not_held_by_turns_of_a_partition_that_is_not_restored(full_runtime: Any) -> None:
    """Stall: _searchable_first waits while capture has *any* backlog, including turns of a partition whose
    shard is still restoring (capture cannot take them). With capture and the writer otherwise idle, no batch of
    theirs ever counts toward ALTM_DERIVE_EVERY_STEPS: derivation of every ready partition waits for that
    restore (forever, when it keeps failing)."""
    rt = full_runtime
    capture = next(lane for lane in rt.lanes if lane.name == "capture")
    derive = next(lane for lane in rt.lanes if lane._hold is not None)
    driver = _Driver("d")
    derive.drivers = [driver]
    rt._ready.add(0)  # partition 0 restored; partition 1 is not (yet)
    capture.put(1, _records(1, range(0, 3), topic=capture.topic))
    derive.put(0, _records(0, range(0, 3), topic=derive.topic))
    capture.start()
    derive.start()
    try:
        await _until(lambda: derive.done.get(0) == 3, timeout_s=4.0)
    finally:
        await derive.stop(1.0)
        await capture.stop(1.0)


async def test_a_record_that_cannot_be_opened_does_not_stall_the_other_partitions(monkeypatch: Any) -> None:
    """Stall: the failing record goes back to the front of its partition, but every later batch takes it again
    together with the other partitions' records (_take fills a batch across partitions), so the whole batch
    fails each time: one record sealed with another key store stops the lane on every partition."""
    monkeypatch.setattr("altm.pipeline.runtime.kafka._lane.FIRST_RETRY_S", 0.01)
    monkeypatch.setattr("altm.pipeline.runtime.kafka._lane.MAX_RETRY_S", 0.02)

    def opener(rec: Record, drivers: Any) -> Record:
        if rec.partition == 0:
            raise RuntimeError("data key is not in the key store")
        return rec

    driver = _Driver("d")
    lane = _lane(driver, batch=10, opener=opener)
    lane.start()
    lane.put(0, _records(0, range(0, 1)))
    lane.put(1, _records(1, range(0, 3)))
    try:
        await _until(lambda: lane.done.get(1) == 3, timeout_s=2.0)
    finally:
        await lane.stop(1.0)


async def test_one_partition_whose_restore_fails_does_not_keep_the_others_from_being_restored(runtime: Any) -> None:
    """Stall: _restore_owned restores partitions in order and the first failure ends the tick; the next tick
    starts again from the same partition. While partition 0's restore fails (its leader unreachable), partition
    1, whose restore would succeed, is never marked ready: its stages never run."""
    proposals = topic_name(Topic.PROPOSALS, runtime.settings.topic_prefix)
    owned = {TopicPartition(proposals, 0), TopicPartition(proposals, 1)}
    runtime._member = _Member(owned)
    await runtime.assigned(frozenset(owned))

    async def catch_up(partition: int, end: int) -> int:
        if partition == 0:
            raise BusError("reading the log failed: leader not available")
        return 0

    async def flush(partition: int) -> None:
        return None

    runtime.writer.catch_up = catch_up
    runtime.writer.flush = flush
    for _ in range(3):  # three ticks of the restore timer
        await runtime._restore_owned()
    assert 1 in runtime._ready


async def test_a_lane_says_when_a_batch_left_it_nothing_queued() -> None:
    emptied: list[int] = []
    drivers: list[Any] = [_Driver("a")]
    lane = Lane("altm.changes", drivers, batch=10, opener=lambda rec, ds: rec, ready=lambda partition: True,
                emptied=lambda which: emptied.append(which.batches))
    lane.put(0, _records(0, range(15)))  # two batches: the first leaves five queued
    lane.start()
    await _until(lambda: lane.done.get(0) == 15)
    await lane.stop(1.0)
    assert emptied == [2] and lane.idle()


def test_a_worker_commits_at_once_when_every_lane_ran_out_of_work(runtime: Any) -> None:
    """Not up to a second later at the next tick: the group's lag shows a worker that is done when it is (the
    benchmarks and the tests' idle detection read it)."""
    writer, *others = runtime.lanes
    others[0].put(0, _records(0, range(3), topic=others[0].topic))  # another lane still has work
    runtime._lane_emptied(writer)
    assert not runtime._commit_now.is_set()
    others[0].forget([0])
    runtime._lane_emptied(writer)
    assert runtime._commit_now.is_set()
