"""Reads off the owner thread: read-only connections, one snapshot per read.

A shard's owner thread (the deployment's event loop) writes; recall runs on threads of its own
(:class:`altm.app.ReadPool`), which read through read-only connections (:class:`Readers`, one set per shard).
A recall makes many queries; inside :func:`read_snapshot` the first one on a shard takes a connection from the
shard's set and opens a read transaction that the others share, so the writer's commits in the meantime (an
erasure among them) are seen by all of them or by none, as when the read ran between two transactions on the
event loop. The block's end commits it and gives the connection back.

What a connection costs is bounded, not multiplied by threads and shards: a connection given back stays open
for the next read (its page cache warm: a read on a connection made for it took half again as long), at most
``IDLE_PER_SHARD`` of a shard and ``IDLE_KEPT`` of a shard set in all, the least recently used closed first
(:class:`IdleReaders`); and a read that goes over many shards (a listing of every scope) holds at most
``SNAPSHOT_SHARDS`` of them at once: past that, the one it read least recently ends its snapshot and goes back
(a shard's snapshot is what a recall needs; nothing reads two shards as one).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from altm.store._errors import ShardError

IDLE_PER_SHARD = 4
"""Idle read-only connections a shard keeps for the next reads (each holds two file descriptors)."""
IDLE_KEPT = 64
"""Idle read-only connections a shard set keeps in all."""
SNAPSHOT_SHARDS = 8
"""Most shards one read holds a snapshot (and a connection) of at once."""

_local = threading.local()


class ReaderConnection(sqlite3.Connection):
    """A read-only connection that knows its cursors (``execute`` makes one through :meth:`cursor`), so that a
    read's end closes those still open: a statement left running (a read that raised inside a loop over a
    cursor, whose traceback keeps it alive) keeps its snapshot, and the write-ahead log behind it, past COMMIT,
    ROLLBACK and even ``close()``, until it is reset. (CPython's ``execute`` makes its cursor without calling
    ``cursor()``: both are overridden.)"""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

    def cursor(self, *args: object, **kwargs: object) -> sqlite3.Cursor:  # type: ignore[override]
        made: sqlite3.Cursor = super().cursor(*args, **kwargs)  # type: ignore[call-overload]
        self._cursors.add(made)
        return made

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self.cursor().execute(sql, parameters)  # the C method makes its cursor without cursor()

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        return self.cursor().executemany(sql, parameters)

    def close_cursors(self) -> None:
        for cur in list(self._cursors):
            with contextlib.suppress(sqlite3.Error):
                cur.close()
        self._cursors.clear()


class IdleReaders:
    """The idle read-only connections of a shard set's shards, least recently given back first: past
    ``IDLE_KEPT`` in all, the oldest is closed. A shard's :class:`Readers` tells it under its own lock (the one
    order the two locks are taken in), so a connection is never listed idle here while a thread has it."""

    def __init__(self, kept: int = IDLE_KEPT) -> None:
        self.kept = kept
        self._lock = threading.Lock()
        self._lru: OrderedDict[int, tuple[Readers, sqlite3.Connection]] = OrderedDict()

    def given_back(self, readers: Readers, conn: sqlite3.Connection) -> list[tuple[Readers, sqlite3.Connection]]:
        """``conn`` idle now, the most recently used; returns those past the bound, for their shards to close
        (:meth:`Readers.retire`, with no lock held)."""
        with self._lock:
            self._lru.pop(id(conn), None)
            self._lru[id(conn)] = (readers, conn)
            return [self._lru.popitem(last=False)[1] for _ in range(max(0, len(self._lru) - self.kept))]

    def taken(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._lru.pop(id(conn), None)


class Readers:
    """The read-only connections of one shard, for threads other than its owner. Inside :func:`read_snapshot`
    a thread borrows one for the block; outside one (a script, a test) it gets a connection of its own, kept
    until :meth:`close`."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], idle: IdleReaders | None = None) -> None:
        self._connect = connect
        self._idle_set = idle if idle is not None else IdleReaders()
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._open: set[sqlite3.Connection] = set()  # every connection made and not closed
        self._own: dict[int, sqlite3.Connection] = {}  # by thread: those outside a snapshot
        self._closed = False

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection: its snapshot's (borrowed on the first read of the block), or its own."""
        opened: _Snapshot | None = getattr(_local, "snapshot", None)
        if opened is not None:
            return opened.connection(self)
        thread = threading.get_ident()
        conn = self._own.get(thread)
        if conn is None:
            conn = self._make()
            with self._lock:
                self._own[thread] = conn
        return conn

    def borrow(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise ShardError("the shard is closed")
            conn = self._idle.pop() if self._idle else None
            if conn is not None:
                self._idle_set.taken(conn)
        return conn if conn is not None else self._make()

    def give_back(self, conn: sqlite3.Connection, *, sound: bool) -> None:
        """``conn``, its read transaction ended: kept for the next read, or closed (``sound`` False: ending its
        transaction failed, so it may still hold a snapshot)."""
        over: list[tuple[Readers, sqlite3.Connection]] = []
        with self._lock:
            keep = sound and not self._closed and len(self._idle) < IDLE_PER_SHARD
            if keep:
                self._idle.append(conn)
                over = self._idle_set.given_back(self, conn)
            else:
                self._open.discard(conn)
        if not keep:
            conn.close()
        for owner, oldest in over:
            owner.retire(oldest)

    def retire(self, conn: sqlite3.Connection) -> None:
        """Close ``conn`` if it is still idle here (the shard set keeps too many idle)."""
        with self._lock:
            idle = conn in self._idle
            if idle:
                self._idle.remove(conn)
                self._open.discard(conn)
        if idle:
            conn.close()

    def _make(self) -> sqlite3.Connection:
        conn = self._connect()
        with self._lock:
            if self._closed:
                conn.close()
                raise ShardError("the shard is closed")
            self._open.add(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            made, idle, self._open, self._idle, self._own = list(self._open), self._idle, set(), [], {}
            for conn in idle:
                self._idle_set.taken(conn)
        for conn in made:
            conn.close()

    def count(self) -> int:
        """Connections made and not closed (borrowed, idle or a thread's own)."""
        with self._lock:
            return len(self._open)


class _Snapshot:
    """The connections one :func:`read_snapshot` block borrowed, by shard, least recently read first."""

    def __init__(self) -> None:
        self.held: OrderedDict[int, tuple[Readers, sqlite3.Connection]] = OrderedDict()

    def connection(self, readers: Readers) -> sqlite3.Connection:
        key = id(readers)
        if key in self.held:
            self.held.move_to_end(key)
            return self.held[key][1]
        while len(self.held) >= SNAPSHOT_SHARDS:
            _, (oldest, conn) = self.held.popitem(last=False)
            _end(oldest, conn)
        conn = readers.borrow()
        try:
            conn.execute("BEGIN")
        except BaseException:
            readers.give_back(conn, sound=False)
            raise
        self.held[key] = (readers, conn)
        return conn

    def end(self, *, failed: bool = False) -> None:
        while self.held:
            _, (readers, conn) = self.held.popitem(last=False)
            _end(readers, conn, failed=failed)


def _end(readers: Readers, conn: sqlite3.Connection, *, failed: bool = False) -> None:
    """End ``conn``'s read transaction and give it back (each on its own: one that fails does not keep the
    others in theirs). Its cursors still open are closed first: a read that raised inside a loop over one left
    its statement running (the cursor alive in the traceback), and a running statement keeps the old snapshot
    past COMMIT, ROLLBACK and close. A read that raised is rolled back and its connection closed, not kept."""
    if isinstance(conn, ReaderConnection):
        conn.close_cursors()  # a statement still running keeps the snapshot whatever ends the transaction
    if failed:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        readers.give_back(conn, sound=False)
        return
    try:
        if conn.in_transaction:
            conn.execute("COMMIT")  # a read transaction: nothing to keep or undo
    except sqlite3.Error:
        readers.give_back(conn, sound=False)
    else:
        readers.give_back(conn, sound=True)


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Every shard read of this thread inside the block sees one snapshot of that shard; the read transactions
    end with the block (they hold no lock a writer waits for: WAL readers only keep the log from being
    truncated while they last). Nested blocks share the outer one."""
    if getattr(_local, "snapshot", None) is not None:
        yield
        return
    snapshot = _Snapshot()
    _local.snapshot = snapshot
    try:
        yield
    except BaseException:
        _local.snapshot = None
        snapshot.end(failed=True)
        raise
    _local.snapshot = None
    snapshot.end()
