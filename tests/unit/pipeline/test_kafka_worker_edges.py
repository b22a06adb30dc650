"""Defects a third review of the Kafka lane runtime found (issue 13), each a test that failed before its fix
(stand-ins, no broker): a writer batch cancelled while it waited for a partition's restore left that
partition's restore lock held (every later batch and restore of it waited for good); deferred work of a
partition that moved to a worker with a data dir of its own was never retried there and was deleted with the
old shard; a batch cancelled by a partial settle dropped the records of partitions that were kept; a stop whose
last outbox flush raised a Kafka error did not leave the group; a parked partition being given up spun the
lane."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError

from altm.bus import OutgoingRecord, Record, TopicPartition
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime, Lane
from altm.store import ShardSet, shard_path
from tests.support.lanes import Member as _Member
from tests.support.lanes import records as _records
from tests.support.lanes import until as _until
from tests.unit.pipeline.test_writer_restore import _log


@pytest.fixture
def runtime(tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        defer_backoff_s=0, worker_drop_unowned_after_s=0.01)
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    yield rt
    shards.close()


# 1 ------------------------------------------------------------------------------------------------------------

async def test_a_writer_batch_cancelled_while_it_waits_for_a_restore_leaves_no_partition_locked(runtime: Any) -> None:
    """Stall: WriterDriver.handle takes the restore lock of each partition of the batch in turn, outside its
    try/finally. A batch of partitions 0 and 1 holds 0's lock while it waits for 1's (the restore timer is
    reading partition 1 from the log). A rebalance that waits longer than ALTM_WORKER_REVOKE_WAIT_S cancels
    the batch (Lane.settle): 0's lock is never released, and every later writer batch and restore of partition
    0 (and, since the restore timer and the writer lane each do one thing at a time, of every partition) waits
    forever."""
    writer = runtime.writer
    gate = asyncio.Event()

    async def fetch(partition: int, start: int, end: int) -> list[Record]:
        await gate.wait()  # reading partition 1 from the log takes a while
        return []

    writer.fetch = fetch
    restoring = asyncio.create_task(writer.catch_up(1, 5))  # the restore timer, on partition 1
    await asyncio.sleep(0.05)
    lane = Lane(writer.topic, [writer], batch=10, opener=lambda rec, ds: rec, ready=lambda p: True)
    lane.start()
    lane.put(0, _records(0, range(0, 2), topic=writer.topic))
    lane.put(1, _records(1, range(5, 7), topic=writer.topic))
    await _until(lambda: lane._current is not None)
    await lane.settle({0, 1}, timeout_s=0.2)  # a rebalance: the batch outlasts the wait and is cancelled
    lane.forget({0, 1})
    gate.set()
    await restoring
    try:
        # partition 0 comes back (or is restored by the timer): its restore lock must be free
        await asyncio.wait_for(writer.catch_up(0, 3), 2.0)
    except TimeoutError:
        pytest.fail("partition 0's restore lock was left held by the cancelled batch: catch_up(0) never returns")
    finally:
        await lane.stop(0.5)


# 2 ------------------------------------------------------------------------------------------------------------

class _BlocksFirst:
    """A driver whose first batch waits for good (a rebalance cancels it); later ones return at once."""

    name = "d"

    def __init__(self) -> None:
        self.calls = 0
        self.handled: list[tuple[int, int]] = []

    def wants(self, record: Record) -> bool:
        return True

    async def handle(self, records: Sequence[Record]) -> int:
        self.calls += 1
        if self.calls == 1:
            await asyncio.Event().wait()
        self.handled += [(r.partition, r.offset) for r in records]
        return len(records)


async def test_a_batch_cancelled_by_a_partial_settle_does_not_drop_the_records_of_kept_partitions() -> None:
    """Loss (latent under aiokafka's eager protocol, which revokes everything): settle({0}) cancels a batch
    that also holds records of partition 1, which is kept. The batch is 'abandoned' as a whole: partition 1's
    records are neither handled nor requeued, and the next records of partition 1 move done[1] past them."""
    driver = _BlocksFirst()
    lane = Lane("altm.changes", [driver], batch=10, opener=lambda rec, ds: rec,  # type: ignore[list-item]
                ready=lambda p: True)
    lane.start()
    lane.put(0, _records(0, range(0, 2)))
    lane.put(1, _records(1, range(0, 3)))
    await _until(lambda: lane._current is not None)
    await lane.settle({0}, timeout_s=0.1)
    lane.forget({0})
    lane.put(1, _records(1, range(3, 5)))
    await _until(lambda: lane.done.get(1) == 5)
    try:
        assert [o for p, o in driver.handled if p == 1] == [0, 1, 2, 3, 4], \
            "done[1] == 5 but offsets 0..2 of partition 1 (kept) were never handled"
    finally:
        await lane.stop(0.5)


# 3 ------------------------------------------------------------------------------------------------------------

class _Capture:
    """The bus's publishing side: keeps what it is given, or fails."""

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.stopped = fail, False
        self.sent: list[OutgoingRecord] = []

    async def publish_many(self, records: Sequence[OutgoingRecord]) -> list[Any]:
        if self.fail:
            raise KafkaTimeoutError("the changes topic's leader is not available")
        self.sent += list(records)
        return []

    async def stop(self) -> None:
        self.stopped = True


async def test_deferred_work_of_a_partition_that_moves_is_handed_to_its_new_owner(runtime: Any) -> None:
    """Loss before (workers with data dirs of their own): a stage defers a record (its model was down) into this
    worker's shard and the lane commits past it. The partition moves: this worker retried deferred work only of
    partitions it owns, the new owner's data dir never had the item, and with ALTM_WORKER_DROP_UNOWNED_AFTER_S
    the shard (and the item) was deleted. Now the item is published again to its topic (the new owner handles
    it there) once the partition is not given back, and only then removed here."""
    rt = runtime
    changes = topic_name(Topic.CHANGES, rt.settings.topic_prefix)
    proposals = topic_name(Topic.PROPOSALS, rt.settings.topic_prefix)
    owned = {TopicPartition(t, 1) for t in (changes, proposals)}
    rt._member, rt.bus = _Member(owned, committed=None), _Capture()
    await rt.assigned(frozenset(owned))
    rt.work.add("extract", changes, 1, 7, "t/w/u", b"a change", "model unavailable")  # deferred, then committed
    rt._member.assigned = set()
    await rt.revoked(frozenset(owned))  # the partition goes to another worker
    await rt.assigned(frozenset())
    await _until(lambda: rt.bus.sent)
    (sent,) = rt.bus.sent
    assert (sent.topic, sent.key, sent.partition) == (changes, "t/w/u", 1)
    await _until(lambda: rt.work.pending({1}) == [])


async def test_a_shard_whose_deferred_work_cannot_be_handed_over_is_not_dropped(runtime: Any) -> None:
    rt = runtime
    changes = topic_name(Topic.CHANGES, rt.settings.topic_prefix)
    rt._member, rt.bus = _Member(set(), committed=None), _Capture(fail=True)
    rt.work.add("extract", changes, 1, 7, "t/w/u", b"a change", "model unavailable")
    for _ in range(3):
        await rt._drop_unowned()
        await asyncio.sleep(0.05)
    assert [(i.partition, i.offset) for i in rt.work.pending({1})] == [(1, 7)]  # kept, shard not dropped
    rt.bus = _Capture()
    await rt._drop_unowned()
    assert [r.topic for r in rt.bus.sent] == [changes]


# 4 ------------------------------------------------------------------------------------------------------------

async def test_a_stop_whose_last_outbox_flush_fails_still_leaves_the_group(runtime: Any) -> None:
    """Stop leaks the group member: KafkaRuntime.stop catches BusError and OSError from its last flush, but
    KafkaBus.publish_many raises aiokafka's errors unwrapped (KafkaTimeoutError is neither). member.stop() and
    bus.stop() are skipped: no LeaveGroup, so the partitions wait a whole session timeout for a new owner, and
    the consumer and producer are left open."""
    rt = runtime
    proposals = topic_name(Topic.PROPOSALS, rt.settings.topic_prefix)
    member, bus = _Member({TopicPartition(proposals, 0)}, committed=None), _Capture(fail=True)
    rt._member, rt.bus = member, bus
    await rt.assigned(frozenset(member.assigned))

    async def flush_all(partitions: Any) -> None:  # a pending outbox row of partition 0
        await rt._publish([OutgoingRecord(topic_name(Topic.CHANGES, rt.settings.topic_prefix), b"c", key="t/w/u")])

    rt.writer.flush_all = flush_all
    with contextlib.suppress(Exception):
        await rt.stop()
    assert member.stopped and bus.stopped, "stop() raised before leaving the group and closing the bus"


# 5 ------------------------------------------------------------------------------------------------------------

async def test_a_parked_partition_being_given_up_does_not_spin_the_lane(monkeypatch: Any) -> None:
    """CPU spin: a parked partition whose retry time has passed but which is closing (settle ran, forget not
    yet: the revocation is committing, or waiting up to ALTM_WORKER_REVOKE_WAIT_S for another lane's batch)
    makes _idle wait with a timeout of 0 again and again: the lane loops at full speed until forget."""
    monkeypatch.setattr("altm.pipeline.runtime.kafka._lane.FIRST_RETRY_S", 0.01)

    def opener(rec: Record, drivers: Any) -> Record:
        raise RuntimeError("data key is not in the key store")

    lane = Lane("altm.changes", [_BlocksFirst()], batch=10, opener=opener,  # type: ignore[list-item]
                ready=lambda p: True)
    takes = [0]
    take = lane._take

    def counting(extra: dict[int, int] | None = None) -> list[Record]:
        takes[0] += 1
        return take(extra)

    lane._take = counting  # type: ignore[method-assign]
    lane.start()
    lane.put(0, _records(0, range(0, 1)))
    await _until(lambda: 0 in lane._parked)
    await lane.settle({0}, timeout_s=1.0)  # nothing in flight: returns at once; forget comes after the commit
    before, start = takes[0], time.monotonic()
    await asyncio.sleep(0.3)
    spun = takes[0] - before
    await lane.stop(0.5)
    assert spun < 20, f"the lane took {spun} empty batches in {time.monotonic() - start:.1f} s while idle"


# 6 ------------------------------------------------------------------------------------------------------------

async def test_a_record_too_large_for_kafka_is_dead_lettered_not_retried_for_ever(runtime: Any) -> None:
    """Found by a review of link_memory: the producer refuses a record over its max_request_size (1 MiB) with
    MessageSizeTooLargeError, and the lane retries the batch for ever (handle_until_done), so the partition's
    lane stalls for every user on it. A stage output that large now goes to the dead-letter topic, as a dead
    letter keeping its first bytes and the size and hash of the whole, and the rest of the batch is sent."""
    from altm.core import decode_dead_letter

    rt = runtime
    rt.bus = bus = _Capture()
    proposals = topic_name(Topic.PROPOSALS, rt.settings.topic_prefix)
    huge = OutgoingRecord(proposals, b'{"op":"link_memory",' + b" " * 1_100_000 + b"}", key="t/w/u")
    fine = OutgoingRecord(proposals, b'{"op":"upsert_memory"}', key="t/w/u")
    await rt._publish([huge, fine])
    assert [r.topic for r in bus.sent] == [topic_name(Topic.DLQ, rt.settings.topic_prefix), proposals]
    dead = decode_dead_letter(bus.sent[0].value)
    assert "exceeds" in dead.error and dead.original.startswith('{"op":"link_memory"')
    assert bus.sent[0].key == "t/w/u" and bus.sent[1].value == fine.value


async def test_deferred_work_a_failed_hand_over_kept_is_handed_over_later(tmp_path: Path) -> None:
    """Loss before (data dirs of their own, without ALTM_WORKER_DROP_UNOWNED_AFTER_S, as with standby copies):
    the hand-over of a moved partition's deferred work failed once (the broker was away) and was never tried
    again: only partitions this worker owns are retried, so the item stayed in this shard for good and the new
    owner never handled it. Now the deferred-work timer tries the hand-over again until it succeeds."""
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        defer_backoff_s=0, worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    try:
        changes = topic_name(Topic.CHANGES, settings.topic_prefix)
        proposals = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        owned = {TopicPartition(t, 1) for t in (changes, proposals)}
        rt._member, rt.bus = _Member(owned, committed=None), _Capture(fail=True)
        await rt.assigned(frozenset(owned))
        rt.work.add("extract", changes, 1, 7, "t/w/u", b"a change", "model unavailable")
        rt._member.assigned = set()
        await rt.revoked(frozenset(owned))
        await rt.assigned(frozenset())
        await _until(lambda: not rt._handovers)  # the hand-over ran and failed
        assert [i.offset for i in rt.work.pending({1})] == [7]
        rt.bus = _Capture()  # the broker is back
        await rt._retry_deferred()
        assert [(r.topic, r.key) for r in rt.bus.sent] == [(changes, "t/w/u")]
        assert rt.work.pending({1}) == []
    finally:
        shards.close()


async def test_deferred_work_a_stop_kept_from_its_new_owner_is_handed_over_at_the_next_start(tmp_path: Path) -> None:
    """The same loss across a restart: the worker stopped with a moved partition's deferred work still in its
    shard (the hand-over had failed), and started again owning other partitions; nothing handed it over. With
    a data dir of its own (standby copies), the first assignment after a start hands over what it does not keep."""
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    try:
        changes = topic_name(Topic.CHANGES, settings.topic_prefix)
        proposals = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        rt.work.add("extract", changes, 2, 7, "t/w/u", b"a change", "model unavailable")  # left by the last run
        rt.work.add("extract", changes, 1, 3, "t/w/v", b"its own", "model unavailable")
        owned = {TopicPartition(t, 1) for t in (changes, proposals)}
        rt._member, rt.bus = _Member(owned, committed=None), _Capture()
        await rt.assigned(frozenset(owned))
        await _until(lambda: not rt._handovers)
        assert [(r.topic, r.key) for r in rt.bus.sent] == [(changes, "t/w/u")]
        assert rt.work.pending({2}) == [] and [i.offset for i in rt.work.pending({1})] == [3]
    finally:
        shards.close()


class _SharedIndex:
    """A vector index other workers write too (a Qdrant server): records what this worker deletes."""

    shared = True

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, ids: Sequence[str]) -> None:
        self.deleted += ids

    def flush(self) -> None:
        return None


async def test_dropping_an_unowned_shard_leaves_a_shared_indexs_points_alone(runtime: Any) -> None:
    """Loss before: workers with data dirs of their own and one Qdrant server. Dropping the shard of a
    partition another worker owns deleted its memories' points from the server: the owner's points, since
    both name them by the same memory ids; the owner's users lost vector recall until a replay."""
    rt = runtime
    log = await _log(rt.settings, 2)
    rt._member, rt.bus = _Member(set(), committed=None), _Capture()
    await rt.writer.handle(log)
    partition = log[0].partition
    assert len(rt.shards.get(partition).memory_ids()) == 2
    rt.vectors = _SharedIndex()
    await rt._drop_unowned()
    await asyncio.sleep(0.05)
    await rt._drop_unowned()
    assert not shard_path(rt.settings.data_dir, partition).exists()  # the shard went
    assert rt.vectors.deleted == []  # its points are the owner's too
