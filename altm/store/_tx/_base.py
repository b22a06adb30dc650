"""The base of a shard's write transaction: its lifecycle and the audited row writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from altm.store._errors import ShardError, StoreUnavailable
from altm.store._redaction import redacted
from altm.store._sql import chunks as _chunks
from altm.store._sql import marks as _marks
from altm.store._tx._common import (
    Row,
    _json,
)


class _TxBase:
    """The transaction's lifecycle (end, savepoints) and the audited row writes every mutation is made of."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection | None = conn

    def end(self) -> None:
        """Called by :meth:`Shard.transaction` on commit or rollback: later calls are refused."""
        self._conn = None

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """All or nothing inside the transaction: what the block wrote is undone when it raises (the writer
        applies each op this way, so an op refused or failing half-way leaves no partial change)."""
        db = self._db
        db.execute("SAVEPOINT op")
        try:
            yield
        except BaseException as exc:
            if not db.in_transaction:  # SQLite rolled the whole transaction back (full disk, I/O error...)
                raise StoreUnavailable(f"the shard's transaction was rolled back: {exc}") from exc
            db.execute("ROLLBACK TO op")
            db.execute("RELEASE op")
            if isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError:
                # the storage (locked, full, corrupt: "database disk image is malformed"), not the request:
                # retried as a whole, never held against the proposal (a corrupt index had rejected it for good)
                raise StoreUnavailable(f"the shard could not be written: {exc}") from exc
            raise
        db.execute("RELEASE op")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ShardError("mutations need a writer transaction (Shard.transaction); this one has ended")
        return self._conn

    def _row(self, table: str, key_column: str, key: str) -> Row | None:
        r = self._db.execute(f"SELECT * FROM {table} WHERE {key_column}=?", (key,)).fetchone()
        return None if r is None else dict(r)

    def _audit(
        self, *, at: str, proposal_id: str | None, actor: str, action: str, table: str, target_id: str,
        old: Any, new: Any,
    ) -> None:
        self._db.execute(
            "INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
            "new_value) VALUES (?,?,?,?,?,?,?,?)",
            (at, proposal_id, actor, action, table, target_id,
             None if old is None else _json(old), None if new is None else _json(new)),
        )

    def _put_row(self, table: str, key_column: str, row: Row, old: Row | None, *, at: str, proposal_id: str,
                 actor: str) -> None:
        """Insert or replace one row of a graph/governance table, audited with its old value."""
        self._audit(at=at, proposal_id=proposal_id, actor=actor, action="insert" if old is None else "update",
                    table=table, target_id=row[key_column], old=old, new=row)
        self._write_row(table, key_column, row, old)

    def _write_row(self, table: str, key_column: str, row: Row, old: Row | None) -> None:
        """The statement of :meth:`_put_row` (its caller has audited it)."""
        cols = list(row)
        if old is None:
            self._db.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({_marks(cols)})",
                             [row[c] for c in cols])
        else:
            sets = ", ".join(f"{c}=?" for c in cols if c != key_column)
            self._db.execute(f"UPDATE {table} SET {sets} WHERE {key_column}=?",
                             [row[c] for c in cols if c != key_column] + [row[key_column]])

    def redact_audit(self, table: str, ids: Sequence[str]) -> None:
        """Replace the text values of earlier audit rows about ``ids`` by their hashes (rows stay)."""
        for chunk in _chunks(ids):
            self._db.execute(
                "UPDATE audit_log SET old_value = redact_json(old_value), new_value = redact_json(new_value), "
                f"redacted = 1 WHERE redacted IN (0, 2) AND target_table = ? AND target_id IN ({_marks(chunk)})",
                [table, *chunk])

    def carry_erased_item(self, item_id: str, home: str, erasure_id: str) -> None:
        """Remember that an erasure removed ``home``'s review item ``item_id`` (here, or in a replay's source)."""
        self._db.execute("INSERT OR IGNORE INTO erased_items (item_id, home, erasure_id) VALUES (?, ?, ?)",
                         (item_id, home, erasure_id))

    def item_erased(self, item_id: str, home: str) -> bool:
        """Whether an erasure removed ``home``'s review item ``item_id`` (here, or in the source of a replay)."""
        return self._db.execute("SELECT 1 FROM erased_items WHERE item_id=? AND home=?",
                                (item_id, home)).fetchone() is not None

    def _erase_row(self, table: str, key: str, row: dict[str, Any], *, at: str, proposal_id: str,
                   target_id: str | None = None, delete: bool = True) -> None:
        """One row an erasure removes: audited (its value redacted), then deleted by ``key`` unless the caller
        deletes a whole set of them at once (``delete=False``). ``table`` and ``key`` are fixed names."""
        self._audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table=table,
                    target_id=target_id if target_id is not None else str(row[key]), old=redacted(row), new=None)
        if table == "held_actions":  # a review decision that names it later is void
            self.carry_erased_item(str(row[key]), f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}",
                                   proposal_id)
        if delete:
            self._db.execute(f"DELETE FROM {table} WHERE {key}=?", (row[key],))
