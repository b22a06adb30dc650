"""Reads off the owner thread: one snapshot per read.

A shard's owner thread (the deployment's event loop) writes; recall runs on threads of its own, each with a
read-only connection per shard (:attr:`Shard._db`). A recall makes many queries; inside :func:`read_snapshot`
the first one on each shard opens a read transaction that the others share, so the writer's commits in the
meantime (an erasure among them) are seen by all of them or by none, as when the read ran between two
transactions on the event loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Every shard read of this thread inside the block sees one snapshot of that shard; the read transactions
    end with the block (they hold no lock a writer waits for: WAL readers only keep the log from being
    truncated while they last)."""
    if getattr(_local, "opened", None) is not None:  # nested: the outer block's snapshot
        yield
        return
    opened: list[sqlite3.Connection] = []
    _local.opened = opened
    try:
        yield
    finally:
        _local.opened = None
        for conn in opened:
            if conn.in_transaction:
                conn.execute("COMMIT")  # a read transaction: nothing to keep or undo


def in_snapshot(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn`` (a reader thread's connection), in this thread's snapshot when one is open."""
    opened: list[sqlite3.Connection] | None = getattr(_local, "opened", None)
    if opened is not None and not conn.in_transaction:
        conn.execute("BEGIN")
        opened.append(conn)
    return conn
