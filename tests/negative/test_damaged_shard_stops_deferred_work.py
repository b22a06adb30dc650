"""A damaged shard file of one partition stops the deferred work of every other partition: a Kafka worker's
retries of what it deferred (a guard or a model that could not decide), and its hand-over of deferred work to a
partition's new owner, fail as a whole on a shard they were not even asked about.

Finding: ``DeferredWork.due`` and ``DeferredWork.pending`` (altm/store/_work.py:66-93, lines 70 and 85) walk
``ShardSet.existing()`` (altm/store/_shardset.py:42-46), which *opens* every shard file on disk (and, for a
writable set, migrates it), and only then skip the partitions they were not asked for. A shard that cannot be
opened (garbage bytes, a bad sector, a directory in its place) therefore raises ``sqlite3.DatabaseError: file is
not a database`` from a call that was about partition 0 only. The Kafka worker's deferred-work timer
(``KafkaRuntime._retry_deferred``, altm/pipeline/runtime/kafka/_runtime.py:572-580) calls
``retry_due(self._owned(...))`` for exactly the partitions it owns, and its hand-over (``_hand_over``,
altm/pipeline/runtime/kafka/_runtime.py:538-554) calls ``work.pending(partitions)``; both fail every time, so
the deferred records of every healthy partition are never retried (their turns never become memories) as long
as one stale or damaged shard file lies in the data dir — including a shard of a partition the worker gave away
long ago, or another worker's in a shared data dir.

Reproduction: the writer defers a proposal of partition P (its guard fails once); another partition's shard
file is then damaged; ``WriterDriver.retry_due({P})`` (what the worker's timer calls) and
``DeferredWork.pending({P})`` raise ``DatabaseError`` instead of handling P's item.

Expected: work asked for a set of partitions opens only those partitions' shards (a damaged shard fails only
its own partition, with its path in the error): P's deferred proposal is listed by ``pending({P})``, applied by
``retry_due({P})`` (returns 1) and its memory is stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import pytest

from altm.bus import OutgoingRecord, Record
from altm.core import Settings, encode, partition_for
from altm.pipeline import ProcessorContext, WriterDriver
from altm.pipeline.processors import CaptureProcessor
from altm.pipeline.writer import Writer
from altm.pipeline.writer.guard import WriteGuard
from altm.store import DeferredWork, ShardSet, shard_path
from tests.support.rows import rows_of
from tests.support.turns import make_turn


async def _proposal_record(settings: Settings) -> Record:
    (prop,) = await CaptureProcessor().process(make_turn(1, "We deploy billing on Tuesdays."),
                                               ProcessorContext(settings=settings))
    return Record("altm.proposals", partition_for(prop.key, settings.partitions), 0, prop.key, encode(prop))


async def test_deferred_work_of_a_partition_is_retried_beside_a_damaged_shard_of_another(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"defer_backoff_s": 0.0})
    shards = ShardSet(s.data_dir, s.partitions)
    published: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        published.extend(records)

    def guard_away(self: WriteGuard, shard: object, mem: object) -> None:
        raise RuntimeError("tombstone index unreadable")

    try:
        work = DeferredWork(shards, s)
        driver = WriterDriver(Writer(shards, s), work, publish, "sqlite:test")
        record = await _proposal_record(s)
        owned = record.partition
        monkeypatch.setattr(WriteGuard, "_tombstone", guard_away)
        assert await driver.handle([record]) == 1
        monkeypatch.undo()
        assert work.count() == 1  # deferred, kept in the shard of its partition

        other = (owned + 1) % s.partitions
        damaged = shard_path(s.data_dir, other)
        damaged.parent.mkdir(parents=True, exist_ok=True)
        damaged.write_bytes(b"\x00not a database\x00" * 512)

        try:
            pending = [item.partition for item in work.pending({owned})]
            retried = await driver.retry_due({owned})
        except sqlite3.DatabaseError as exc:
            pytest.fail(f"the deferred work of partition {owned} failed on the damaged shard of partition {other}: "
                        f"{type(exc).__name__}: {exc}")
        assert pending == [owned]
        assert retried == 1
        stored = rows_of(shard_path(s.data_dir, owned), "SELECT content FROM memories")
        assert [r["content"] for r in stored] == ["We deploy billing on Tuesdays."]
    finally:
        shards.close()
