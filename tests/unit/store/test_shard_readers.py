"""A shard's reads on threads other than its owner's (recall off the event loop): each thread reads through a
read-only connection of its own, inside :func:`read_snapshot` in one snapshot; writes stay with the owner."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest

from altm.store import Shard, ShardError, ShardSet, read_snapshot
from altm.store._reading import IDLE_PER_SHARD, SNAPSHOT_SHARDS
from tests.support.atoms import insert_atom

T = TypeVar("T")


def _on_thread(fn: Callable[[], T]) -> T:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result()


def test_a_reader_thread_reads_what_the_owner_committed(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    try:
        made = insert_atom(shard, "the export runs nightly")
        assert _on_thread(lambda: shard.memory_ids()) == [made]
        insert_atom(shard, "the import runs weekly")
        assert len(_on_thread(lambda: shard.memory_ids())) == 2  # a later read sees the later commit
    finally:
        shard.close()


def test_a_snapshot_does_not_see_a_commit_made_during_it(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    first_read, committed = threading.Event(), threading.Event()

    def read_twice() -> tuple[int, int, int]:
        with read_snapshot():
            before = len(shard.memory_ids())
            first_read.set()
            assert committed.wait(10)
            during = len(shard.memory_ids())
        return before, during, len(shard.memory_ids())

    try:
        insert_atom(shard, "the export runs nightly")
        with ThreadPoolExecutor(max_workers=1) as pool:
            counts = pool.submit(read_twice)
            assert first_read.wait(10)
            insert_atom(shard, "the import runs weekly")  # the owner commits while the reader's snapshot is open
            committed.set()
            assert counts.result() == (1, 1, 2)
    finally:
        shard.close()


def test_writes_off_the_owner_thread_are_refused(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    try:
        with pytest.raises(ShardError, match="thread that owns it"):
            _on_thread(lambda: insert_atom(shard, "written from another thread"))
        assert shard.memory_ids() == []
    finally:
        shard.close()


def test_close_closes_every_readers_connection(tmp_path: Path) -> None:
    shard = Shard(tmp_path / "s.db", 0).open()
    insert_atom(shard, "the export runs nightly")
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert len(pool.submit(shard.memory_ids).result()) == 1
        assert shard._readers.count() == 1
        shard.close()
        assert shard._readers.count() == 0
        with pytest.raises(ShardError, match="not open"):
            pool.submit(shard.memory_ids).result()


def test_a_shard_first_opened_by_a_reader_is_still_written_by_its_owner(tmp_path: Path) -> None:
    shards = ShardSet(tmp_path / "data", 2)
    try:
        assert _on_thread(lambda: shards.get(1).memory_ids()) == []  # the reader's read opens the shard
        made = insert_atom(shards.get(1), "the export runs nightly")  # the owner (this thread) writes it
        assert _on_thread(lambda: shards.get(1).memory_ids()) == [made]
    finally:
        shards.close()


def test_reads_hold_a_bounded_number_of_connections(tmp_path: Path) -> None:
    """Concurrent snapshots borrow a connection each and give it back: a shard keeps up to IDLE_PER_SHARD idle
    ones (warm for the next reads), the shard set some in all (here five), the least recently used closed first;
    a read over many shards holds at most SNAPSHOT_SHARDS of them at once."""
    shards = ShardSet(tmp_path / "data", SNAPSHOT_SHARDS + 4)
    shards._idle.kept = 5
    for p in range(shards.partitions):
        shards.get(p)
    held: list[int] = []
    inside, counted = threading.Barrier(3), threading.Barrier(3)

    def read_one() -> None:
        with read_snapshot():
            shards.get(0).memory_ids()
            inside.wait(10)  # three snapshots of shard 0 at once: three connections
            held.append(shards.get(0)._readers.count())
            counted.wait(10)  # none given back before all three counted

    def read_all() -> int:
        with read_snapshot():
            for p in range(shards.partitions):
                shards.get(p).memory_ids()
            return sum(shards.get(p)._readers.count() for p in range(shards.partitions))

    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            for done in [pool.submit(read_one) for _ in range(3)]:
                done.result()
            assert held == [3, 3, 3]
            assert shards.get(0)._readers.count() == 3 <= IDLE_PER_SHARD  # kept, warm, for the next reads
            assert pool.submit(read_all).result() <= SNAPSHOT_SHARDS + 5
            left = sum(shards.get(p)._readers.count() for p in range(shards.partitions))
            assert left == 5, left  # the least recently used closed, shard 0's among them
    finally:
        shards.close()
