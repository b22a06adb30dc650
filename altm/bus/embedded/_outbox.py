"""A local durable outbox: records to publish, kept in a SQLite file until the broker acknowledged them.

The host SDK writes every event here first (durable when ``add`` returns), and a background sender drains it
in order, so a broker outage loses nothing and delivery keeps the order per key."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import orjson

from altm.bus._base import OutgoingRecord

_DDL = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT, value BLOB NOT NULL, headers BLOB
);
CREATE TABLE IF NOT EXISTS undeliverable (
    seq INTEGER PRIMARY KEY, topic TEXT NOT NULL, key TEXT, value BLOB NOT NULL, headers BLOB, reason TEXT NOT NULL
);
"""

Pending = tuple[int, OutgoingRecord]


class LocalOutbox:
    """One outbox file, one owner (the host producer of one agent process)."""

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(Path(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_DDL)
        columns = {str(row[1]) for row in self._db.execute("PRAGMA table_info(outbox)")}
        if "headers" not in columns:  # an outbox file written before records kept their headers
            try:
                self._db.execute("ALTER TABLE outbox ADD COLUMN headers BLOB")
            except sqlite3.OperationalError as exc:  # another process opening it added it first
                if "duplicate column" not in str(exc):
                    raise

    def add(self, records: Sequence[OutgoingRecord]) -> None:
        """Keep ``records`` (all or none) until they are acknowledged."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT INTO outbox (topic, key, value, headers) VALUES (?,?,?,?)",
                                 [(r.topic, r.key, r.value, _headers(r)) for r in records])
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite rolled a failed one back itself (a full disk)
                self._db.execute("ROLLBACK")
            raise

    def oldest(self, limit: int) -> list[Pending]:
        """The oldest records not yet acknowledged, with their sequence numbers, in order."""
        rows = self._db.execute("SELECT seq, topic, key, value, headers FROM outbox ORDER BY seq LIMIT ?", (limit,))
        return [(int(seq), OutgoingRecord(str(topic), bytes(value), key=key, headers=_unpacked(headers)))
                for seq, topic, key, value, headers in rows]

    def acknowledge(self, up_to_seq: int) -> None:
        self._db.execute("DELETE FROM outbox WHERE seq <= ?", (up_to_seq,))

    def acknowledge_each(self, seqs: Sequence[int]) -> None:
        """These records (not necessarily a prefix) are acknowledged."""
        self._db.executemany("DELETE FROM outbox WHERE seq = ?", [(s,) for s in seqs])

    def set_aside(self, seq: int, reason: str) -> None:
        """Record ``seq`` can never be delivered: moved out of the outbox into ``undeliverable`` (kept, with the
        reason), so the records after it go on."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("INSERT OR REPLACE INTO undeliverable (seq, topic, key, value, headers, reason) "
                             "SELECT seq, topic, key, value, headers, ? FROM outbox WHERE seq = ?", (reason, seq))
            self._db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite rolled a failed one back itself (a full disk)
                self._db.execute("ROLLBACK")
            raise

    def set_aside_records(self) -> list[tuple[int, str]]:
        """The records set aside (sequence number, reason), oldest first."""
        return [(int(seq), str(reason)) for seq, reason in
                self._db.execute("SELECT seq, reason FROM undeliverable ORDER BY seq")]

    def pending(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])

    def close(self) -> None:
        self._db.close()


def _headers(record: OutgoingRecord) -> bytes | None:
    return orjson.dumps([[name, value.hex()] for name, value in record.headers]) if record.headers else None


def _unpacked(stored: bytes | None) -> tuple[tuple[str, bytes], ...]:
    if not stored:
        return ()
    return tuple((str(name), bytes.fromhex(value)) for name, value in orjson.loads(stored))
