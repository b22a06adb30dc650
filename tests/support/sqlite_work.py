"""How much work SQLite does on a connection inside a block: the cost tests assert on it, not on seconds."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Counted:
    n: int = 0


@contextmanager
def vm_steps(conn: sqlite3.Connection, every: int = 10) -> Iterator[Counted]:
    """The virtual machine steps ``conn`` runs inside the block, counted in units of ``every``."""
    counted = Counted()

    def tick() -> int:
        counted.n += 1
        return 0

    conn.set_progress_handler(tick, every)
    try:
        yield counted
    finally:
        conn.set_progress_handler(None, 0)


@contextmanager
def statements(conn: sqlite3.Connection) -> Iterator[Counted]:
    """The SQL statements ``conn`` runs inside the block."""
    counted = Counted()

    def seen(_sql: str) -> None:
        counted.n += 1

    conn.set_trace_callback(seen)
    try:
        yield counted
    finally:
        conn.set_trace_callback(None)
