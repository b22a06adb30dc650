"""The word and trigram indexes are written from a queue once per writer transaction (schema 21,
``altm.store._text_index``): what a reader searches after the commit is what the triggers wrote statement by
statement before, whatever the transaction did to a row (inserted, re-indexed, deleted, a savepoint undone).

Both indexes hold the content's index form (schema 24, ``altm.store.index_form``: NFKC, casefolded): a row typed
fullwidth is indexed, re-indexed and un-indexed in that form, and a shard of version 23 (indexed as stored) is
indexed again in that form when it migrates. FTS5's own integrity check compares an external-content index with
the content table as stored, which is what is indexed only for text the form leaves alone but for case (the
ASCII rows of the first tests); :func:`_exact` compares each index with one built afresh from the rows' index
form."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from altm.core import Scope
from altm.store import MemoryRow, Shard
from altm.store import _migrations as migrations
from altm.store._migrations import Migration, load_migrations
from altm.store._policy import home_substring
from altm.store._text_index import built_with, register_index_form
from tests.support.atoms import AT, SCOPE, atom_row

FULLWIDTH = "Order ＡＢ-１２３４５ ships from Ｏｓａｋａ."


def _reader(path: Path) -> sqlite3.Connection:
    """A connection of its own, as a reader's (FTS5's integrity check is a write statement: not read-only)."""
    conn = sqlite3.connect(path, isolation_level=None)
    register_index_form(conn)
    return conn


def _instances(conn: sqlite3.Connection, table: str) -> list[tuple[str, int, str, int]]:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{table} USING fts5vocab(main, {table}, instance)")
    return sorted(conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{table}"))


def _exact(conn: sqlite3.Connection) -> None:
    """Each index holds exactly the terms (with their rows, columns and offsets) of the live rows' index form."""
    conn.execute("CREATE VIRTUAL TABLE temp.fresh_words USING fts5 (content, context, scope_terms, "
                 "tokenize=\"porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'\")")
    conn.execute("INSERT INTO temp.fresh_words (rowid, content, context, scope_terms) "
                 "SELECT rowid, index_form(content), index_form(context), scope_terms FROM memories")
    conn.execute("CREATE VIRTUAL TABLE temp.fresh_tri USING fts5 (content, scope_terms, tokenize='trigram')")
    conn.execute("INSERT INTO temp.fresh_tri (rowid, content, scope_terms) "
                 "SELECT rowid, index_form(content), home_code(scope_terms) FROM memories")
    for live, fresh in (("memories_fts", "fresh_words"), ("memories_fts_tri", "fresh_tri")):
        conn.execute(f"CREATE VIRTUAL TABLE temp.v_{fresh} USING fts5vocab(temp, {fresh}, instance)")
        rebuilt = sorted(conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{fresh}"))
        assert _instances(conn, live) == rebuilt, live
    for table in ("fresh_words", "fresh_tri", "v_fresh_words", "v_fresh_tri"):
        conn.execute(f"DROP TABLE temp.{table}")


def _words(conn: sqlite3.Connection, query: str) -> set[str]:
    return {str(r[0]) for r in conn.execute(
        "SELECT m.memory_id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE memories_fts MATCH ?",
        (query,))}


def _trigrams(conn: sqlite3.Connection, query: str) -> set[str]:
    return {str(r[0]) for r in conn.execute(
        "SELECT m.memory_id FROM memories_fts_tri f JOIN memories m ON m.rowid = f.rowid "
        "WHERE memories_fts_tri MATCH ?", (query,))}


def _consistent(conn: sqlite3.Connection) -> None:
    """FTS5's own check of each external-content index (raises if it is damaged): the word index also against
    the memories table; the trigram index holds a code of each row's home, not the row's ``scope_terms`` as
    stored (schema 29), so against the table only :func:`_exact` compares it (an index built afresh)."""
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("INSERT INTO memories_fts_tri (memories_fts_tri, rank) VALUES ('integrity-check', 0)")


def test_a_transaction_that_inserts_updates_and_deletes_leaves_both_indexes_exact(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    shard = Shard(path, 0).open()
    try:
        kept, changed, gone = atom_row("The staging cluster runs in Dublin."), atom_row("Deploys happen on Fridays."), \
            atom_row("The quartermaster prefers zucchini.")
        with shard.transaction() as tx:
            for row in (kept, changed, gone):
                tx.insert_memory(row, at=AT.isoformat(), proposal_id=f"p-{row['memory_id']}", actor="extract")
            moved: MemoryRow = {**changed, "content": "Deploys happen on Tuesdays."}
            tx.update_memory(changed, moved, at=AT.isoformat(), proposal_id="p-move", actor="govern")
            with pytest.raises(RuntimeError), tx.savepoint():  # an op refused half-way: undone, queue included
                tx.insert_memory(atom_row("A marmalade sandwich."), at=AT.isoformat(), proposal_id="p-x", actor="x")
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
                    tx.insert_memory(atom_row(f"Fact number {i} about the cluster."), at=AT.isoformat(),
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
    old = atom_row("The old shard mentions Reykjavik.")
    conn.execute(f"INSERT INTO memories ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})", list(old.values()))
    conn.close()
    shard = Shard(path, 0).open()  # migrates to the latest version
    try:
        new = atom_row("The new row mentions Reykjavik too.")
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
    row = atom_row("Queued by a migration's own statement.")
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


def test_a_fullwidth_row_is_indexed_changed_and_removed_in_its_index_form(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    shard = Shard(path, 0).open()
    try:
        row, other = atom_row(FULLWIDTH), atom_row("Ｔｉｃｋｅｔ ＩＮＣ-７７ is open.")
        with shard.transaction() as tx:
            tx.insert_memory(row, at=AT.isoformat(), proposal_id="p1", actor="extract")
            tx.insert_memory(other, at=AT.isoformat(), proposal_id="p2", actor="extract")
        reader = _reader(path)
        try:
            _exact(reader)
            assert _words(reader, '"ab-12345"') == {row["memory_id"]}
            assert _words(reader, "osaka") == {row["memory_id"]}
            assert _trigrams(reader, '"AB-12345"') == {row["memory_id"]}
        finally:
            reader.close()
        with shard.transaction() as tx:
            tx.update_memory(row, {**row, "content": "Order ＣＤ-９９ ships from Ｋｏｂｅ."}, at=AT.isoformat(),
                             proposal_id="p3", actor="govern")
            tx.delete_memory(other, at=AT.isoformat(), proposal_id="p4", actor="erase")
        reader = _reader(path)
        try:
            _exact(reader)  # the old forms left both indexes: no stale 'osaka', 'inc', '77' and no trigram of them
            assert _words(reader, "osaka") == set() and _words(reader, "inc") == set()
            assert _trigrams(reader, '"AB-12345"') == set()
            assert _words(reader, "kobe") == {row["memory_id"]}
            assert _trigrams(reader, '"CD-99"') == {row["memory_id"]}
        finally:
            reader.close()
    finally:
        shard.close()


def _shard_of_version(path: Path, monkeypatch: pytest.MonkeyPatch, version: int, rows: list[MemoryRow], *,
                      form: str) -> sqlite3.Connection:
    """A shard file at schema ``version`` holding ``rows``, its word and trigram indexes as that version applied
    its queue (each text through the SQL function ``form``: "index_form" from version 24, "" before), and a
    connection to it (migrate's own indexing kept out: this process indexes otherwise)."""
    conn = sqlite3.connect(path, isolation_level=None)
    with monkeypatch.context() as patched:
        patched.setattr(migrations, "load_migrations", lambda: load_migrations()[:version])
        patched.setattr(migrations, "_text_indexes_current", lambda conn: None)
        assert migrations.migrate(conn) == version
    register_index_form(conn)
    for row in rows:
        conn.execute(f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     list(row.values()))
    conn.execute("INSERT INTO memories_fts (memories_fts, rowid, content, context, scope_terms) "
                 f"SELECT command, row_id, {form}(content), {form}(context), scope_terms FROM index_pending "
                 "WHERE target = 'words'")
    conn.execute("INSERT INTO memories_fts_tri (memories_fts_tri, rowid, content) "
                 f"SELECT command, row_id, {form}(content) FROM index_pending WHERE target = 'trigrams'")
    conn.execute("DELETE FROM index_pending")
    return conn


def test_a_shard_of_version_23_is_indexed_again_in_the_index_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.db"
    old = atom_row(FULLWIDTH)
    conn = _shard_of_version(path, monkeypatch, 23, [old], form="")  # version 23 indexed the content as stored
    assert _words(conn, "osaka") == set()  # the fullwidth word as it is
    conn.close()
    with caplog.at_level(logging.INFO, logger="altm.store"):
        shard = Shard(path, 0).open()  # migrates to the latest version, and says so (it re-indexes every row)
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == [
        f"migrating shard {path} from schema version 23 to {migrations.LATEST_VERSION}",
        f"migrated shard {path} to schema version {migrations.LATEST_VERSION}",
        f"indexed the text of shard {path} again ({built_with()})"]
    try:
        reader = _reader(path)
        try:
            _exact(reader)
            assert _words(reader, "osaka") == {old["memory_id"]}
            assert _trigrams(reader, '"AB-12345"') == {old["memory_id"]}
        finally:
            reader.close()
        with shard.transaction() as tx:  # un-indexed with the form the migration indexed it with
            tx.delete_memory(old, at=AT.isoformat(), proposal_id="p-gone", actor="erase")
        reader = _reader(path)
        try:
            _exact(reader)
            assert _instances(reader, "memories_fts") == [] and _instances(reader, "memories_fts_tri") == []
        finally:
            reader.close()
    finally:
        shard.close()


def test_a_shard_of_version_28_gets_the_home_in_its_trigram_index(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Version 29: the trigram index holds a code of each row's home beside the content (made again, filled
    again), a substring search matches the reader's home inside the index, and a change of scope indexes the row
    again."""
    path = tmp_path / "s.db"
    mine = atom_row("Priya reviewed the rollout.")
    other_scope = Scope(tenant_id="t", workspace_id="w", user_id="u2", agent_id="a")  # "u" is a prefix of "u2"
    theirs = atom_row("Priya reviewed the rollout.", scope=other_scope, id_parts=["other"])
    # version 28 indexed the index form, and the trigram index held the content alone
    _shard_of_version(path, monkeypatch, 28, [mine, theirs], form="index_form").close()
    shard = Shard(path, 0).open()  # migrates to 29: the trigram index is made and filled again
    try:
        reader = _reader(path)
        try:
            _exact(reader)
            assert _trigrams(reader, '"rollout"') == {mine["memory_id"], theirs["memory_id"]}
            assert _trigrams(reader, f'{home_substring(SCOPE)} AND content : "rollout"') == {mine["memory_id"]}
            assert _trigrams(reader, f'{home_substring(other_scope)} AND content : "rollout"') == {
                theirs["memory_id"]}
        finally:
            reader.close()
        with shard.transaction() as tx:  # the row moves to another user: indexed again under its new home
            tx.update_memory(mine, {**mine, "user_id": "u3"}, at=AT.isoformat(), proposal_id="p-move",
                             actor="test")
        reader = _reader(path)
        try:
            _exact(reader)
            assert _trigrams(reader, f'{home_substring(SCOPE)} AND content : "rollout"') == set()
        finally:
            reader.close()
    finally:
        shard.close()
