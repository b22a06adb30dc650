"""The word and trigram indexes are written from a queue once per writer transaction (schema 21,
``altm.store._text_index``): what a reader searches after the commit is what the triggers wrote statement by
statement before, whatever the transaction did to a row (inserted, re-indexed, deleted, a savepoint undone)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from altm.core import Kind, Layer, Method, Scope
from altm.pipeline.processors._base import derived_memory
from altm.store import MemoryRow, Shard, memory_to_row
from altm.store import _migrations as migrations
from altm.store._migrations import Migration, load_migrations

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
AT = datetime(2026, 1, 1, tzinfo=UTC)


def _atom(text: str) -> MemoryRow:
    mem = derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content=text,
                         evidence=[], processor="extract", method=Method.HEURISTIC, id_parts=["t", text],
                         valid_from=AT)
    return memory_to_row(mem, AT)


def _reader(path: Path) -> sqlite3.Connection:
    """A connection of its own, as a reader's (FTS5's integrity check is a write statement: not read-only)."""
    return sqlite3.connect(path, isolation_level=None)


def _words(conn: sqlite3.Connection, query: str) -> set[str]:
    return {str(r[0]) for r in conn.execute(
        "SELECT m.memory_id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE memories_fts MATCH ?",
        (query,))}


def _trigrams(conn: sqlite3.Connection, query: str) -> set[str]:
    return {str(r[0]) for r in conn.execute(
        "SELECT m.memory_id FROM memories_fts_tri f JOIN memories m ON m.rowid = f.rowid "
        "WHERE memories_fts_tri MATCH ?", (query,))}


def _consistent(conn: sqlite3.Connection) -> None:
    """FTS5's own check of each external-content index against the memories table (raises if they differ)."""
    for table in ("memories_fts", "memories_fts_tri"):
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")


def test_a_transaction_that_inserts_updates_and_deletes_leaves_both_indexes_exact(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    shard = Shard(path, 0).open()
    try:
        kept, changed, gone = _atom("The staging cluster runs in Dublin."), _atom("Deploys happen on Fridays."), \
            _atom("The quartermaster prefers zucchini.")
        with shard.transaction() as tx:
            for row in (kept, changed, gone):
                tx.insert_memory(row, at=AT.isoformat(), proposal_id=f"p-{row['memory_id']}", actor="extract")
            moved: MemoryRow = {**changed, "content": "Deploys happen on Tuesdays."}
            tx.update_memory(changed, moved, at=AT.isoformat(), proposal_id="p-move", actor="govern")
            with pytest.raises(RuntimeError), tx.savepoint():  # an op refused half-way: undone, queue included
                tx.insert_memory(_atom("A marmalade sandwich."), at=AT.isoformat(), proposal_id="p-x", actor="x")
                raise RuntimeError("refused")
        with shard.transaction() as tx:
            tx.delete_memory(gone, at=AT.isoformat(), proposal_id="p-gone", actor="erase")
        reader = _reader(path)
        try:
            assert reader.execute("SELECT COUNT(*) FROM index_pending").fetchone()[0] == 0
            _consistent(reader)
            assert _words(reader, "dublin") == {kept["memory_id"]}
            assert _words(reader, "tuesdays") == {changed["memory_id"]}
            assert _words(reader, "fridays") == set()  # the old content left the word index
            assert _trigrams(reader, "uesday") == {changed["memory_id"]}
            assert _trigrams(reader, "riday") == set()
            assert _words(reader, "zucchini") == set() and _trigrams(reader, "zucchin") == set()
            assert _words(reader, "marmalade") == set()  # the savepoint's row never reached an index
        finally:
            reader.close()
    finally:
        shard.close()


def test_the_index_is_written_once_for_the_transaction_not_per_savepoint(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the queue: fifty proposals, each in its own savepoint, write the index's blocks once at the
    commit (FTS5 wrote a segment at every savepoint before: fifty and more block writes)."""
    writes: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: writes.append(sql) if "_data'(id, block)" in sql else None)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    path = tmp_path / "s.db"
    shard = Shard(path, 0).open()
    try:
        writes.clear()
        with shard.transaction() as tx:
            for i in range(50):
                with tx.savepoint():
                    tx.insert_memory(_atom(f"Fact number {i} about the cluster."), at=AT.isoformat(),
                                     proposal_id=f"p{i}", actor="extract")
        assert 0 < len(writes) < 20, writes[:3]
        reader = _reader(path)
        try:
            _consistent(reader)
            assert len(_words(reader, "cluster")) == 50
        finally:
            reader.close()
    finally:
        shard.close()


def test_a_shard_of_version_20_keeps_its_index_and_indexes_through_the_queue_after(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for mig in load_migrations()[:20]:
        conn.executescript(f"BEGIN;\n{mig.sql}\nCOMMIT;")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (20, 'then', 'then')")
    old = _atom("The old shard mentions Reykjavik.")
    conn.execute(f"INSERT INTO memories ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})", list(old.values()))
    conn.close()
    shard = Shard(path, 0).open()  # migrates to the latest version
    try:
        new = _atom("The new row mentions Reykjavik too.")
        with shard.transaction() as tx:
            tx.insert_memory(new, at=AT.isoformat(), proposal_id="p-new", actor="extract")
        reader = _reader(path)
        try:
            _consistent(reader)
            assert _words(reader, "reykjavik") == {old["memory_id"], new["memory_id"]}
        finally:
            reader.close()
    finally:
        shard.close()


def test_what_a_migration_queues_is_indexed_before_the_shard_is_used(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    row = _atom("Queued by a migration's own statement.")
    values = ", ".join("NULL" if v is None else repr(v) for v in row.values())
    later = Migration(len(load_migrations()) + 1, "9999_later.sql",
                      f"INSERT INTO memories ({', '.join(row)}) VALUES ({values});")
    monkeypatch.setattr(migrations, "load_migrations", lambda: [*load_migrations(), later])
    monkeypatch.setattr(migrations, "LATEST_VERSION", later.version)
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    assert migrations.migrate(conn) == later.version
    assert conn.execute("SELECT COUNT(*) FROM index_pending").fetchone()[0] == 0
    _consistent(conn)
    assert _words(conn, "migration") == {row["memory_id"]}
