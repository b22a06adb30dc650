"""The tombstones an erasure left in the outbox of a shard this worker no longer owns reach the log for the
partition's owner (the mitigation of ``tests/integration/test_kafka_erasure_burial_left_in_outbox.py``).

An erasure's ``bury`` proposal (the hashes of what it erased) waits in the outbox of the shard that applied it
until the next flush, and nobody else can make it: the erased session's keys are destroyed when the erasure is
applied. A worker that stopped before that flush (killed, or its broker away) and comes back without the partition
used to keep it there for good (only an owner flushes its outbox; a standby copy dropped it). Now the first
assignment publishes the ``bury`` rows of every shard of the data dir whose partition another worker owns (and
only those rows: the changes, the new owner derives again from its restore), and one that fails is tried again by
the flush timer; a standby copy publishes them before it drops its outbox. Stand-ins, no broker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from altm.bus import TopicPartition
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.store import ShardSet
from tests.support.lanes import Member, until
from tests.unit.pipeline.test_kafka_worker_edges import _Capture

PREFIX = "team-a."
BURY = b'{"op":"bury","event_type":"proposal"}'


def _runtime(tmp_path: Path) -> tuple[Any, ShardSet]:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        topic_prefix=PREFIX)
    shards = ShardSet(settings.data_dir, settings.partitions)
    with shards.get(2).transaction() as tx:  # left by an erasure just before this worker lost partition 2
        tx.enqueue(Topic.CHANGES.value, "t/w/u", b"a change")
        tx.enqueue(Topic.PROPOSALS.value, "t/w/u", BURY)
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    owned = {TopicPartition(topic_name(t, PREFIX), 1) for t in (Topic.CHANGES, Topic.PROPOSALS)}
    rt._member = Member(owned, committed=None)
    rt._owned_tps = frozenset()
    return rt, shards


async def test_the_tombstones_of_a_partition_another_worker_owns_go_to_the_log_at_the_assignment(
        tmp_path: Path) -> None:
    rt, shards = _runtime(tmp_path)
    try:
        rt.bus = _Capture()
        await rt.assigned(frozenset(rt._member.assigned))
        await until(lambda: not rt._handovers)
        assert [(r.topic, r.value) for r in rt.bus.sent] == [(f"{PREFIX}proposals", BURY)]
        assert [row[1] for row in shards.get(2).pending_outbox()] == ["changes"]  # the rest is left alone
    finally:
        shards.close()


async def test_tombstones_the_broker_did_not_take_are_published_by_the_flush_timer(tmp_path: Path) -> None:
    rt, shards = _runtime(tmp_path)
    try:
        rt.bus = _Capture(fail=True)
        await rt.assigned(frozenset(rt._member.assigned))
        await until(lambda: not rt._handovers)
        assert rt._burials_due == {2} and len(shards.get(2).pending_burials()) == 1  # kept for the next try
        rt.bus = _Capture()
        await rt._flush_owned()
        assert [(r.topic, r.value) for r in rt.bus.sent] == [(f"{PREFIX}proposals", BURY)]
        assert rt._burials_due == set() and shards.get(2).pending_burials() == []
    finally:
        shards.close()
