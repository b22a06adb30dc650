from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from altm.store._migrations import LATEST_VERSION, current_version, load_migrations, migrate
from altm.store._text_index import apply_pending


def test_migrate_is_idempotent_and_versioned(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    assert migrate(conn) == LATEST_VERSION
    assert migrate(conn) == LATEST_VERSION
    assert current_version(conn) == LATEST_VERSION == len(load_migrations())
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for t in ("memories", "audit_log", "tombstones", "rejections", "consumer_offsets", "outbox",
              "graph_nodes", "graph_edges", "runtime_cycles", "ccr_entries", "llm_cache", "memories_fts",
              "memories_fts_tri"):
        assert t in tables


def test_audit_log_is_insert_only(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    migrate(conn)
    conn.execute("INSERT INTO audit_log (at, actor, action, target_table, target_id) VALUES ('t','a','x','m','1')")
    with pytest.raises(sqlite3.IntegrityError, match="insert-only"):
        conn.execute("UPDATE audit_log SET actor='b'")
    with pytest.raises(sqlite3.IntegrityError, match="insert-only"):
        conn.execute("DELETE FROM audit_log")


def test_newer_shard_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    migrate(conn)
    conn.execute("INSERT INTO schema_version VALUES (999, 'future', 'now')")
    with pytest.raises(RuntimeError, match="newer than this ALTM"):
        migrate(conn)


def _at_version_1(conn: sqlite3.Connection) -> None:
    """A shard as version 1 left it."""
    first = load_migrations()[0]
    conn.executescript(f"BEGIN;\n{first.sql}\nCOMMIT;")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1, ?, 'then')", [first.name])


def test_version_2_reindexes_existing_memories_with_their_scope_terms(tmp_path: Path) -> None:
    from altm.core import Layer, Scope
    from altm.recall.retrieval._policy import ScopePolicy

    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    _at_version_1(conn)
    for mid, agent, session, layer in (("m1", "coder", "s1", "L0"), ("m2", "other", "s1", "L0"),
                                       ("m3", "coder", "s2", "L0"), ("m4", "coder", "s2", "L2")):
        conn.execute(
            "INSERT INTO memories (memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, layer, kind, "
            "content, content_hash, method, processor, recorded_at) VALUES (?, 'acme', 'w', 'dana', ?, ?, ?, "
            "'fact', 'the billing deadline is near', 'h', 'verbatim', 'test', 'now')", [mid, agent, session, layer])
    assert migrate(conn) == LATEST_VERSION
    policy = ScopePolicy(Scope(tenant_id="acme", workspace_id="w", user_id="dana", agent_id="coder"), "s1",
                         layers=(Layer.L0, Layer.L2))
    found = {r[0] for r in conn.execute(
        "SELECT m.memory_id FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        "WHERE memories_fts MATCH ?", [f"{policy.fts_filter()} AND billing"])}
    # this agent's message of this session and its atom of another session; not another agent's, not the
    # message of another session
    assert found == {"m1", "m4"}
    # rows written after the migration are indexed by the new triggers (queued: a writer transaction indexes
    # the queue before it commits, as ``apply_pending`` does here)
    conn.execute(
        "INSERT INTO memories (memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, layer, kind, "
        "content, content_hash, method, processor, recorded_at) VALUES ('m5', 'acme', 'w', 'dana', 'coder', 's1', "
        "'L0', 'message', 'billing again', 'h2', 'verbatim', 'test', 'now')")
    apply_pending(conn)
    assert conn.execute("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?",
                        [f"{policy.fts_filter()} AND billing"]).fetchone()[0] == 3


def test_a_shard_of_an_older_version_is_not_read_without_migrating(tmp_path: Path) -> None:
    from altm.store import Shard, ShardError

    path = tmp_path / "p0.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _at_version_1(conn)
    conn.close()
    with pytest.raises(ShardError, match=r"schema version 1.*open the data dir once for writing"):
        Shard(path, 0, read_only=True).open()
    writable = Shard(path, 0).open()  # migrates
    writable.close()
    reader = Shard(path, 0, read_only=True).open()
    reader.close()


def test_both_word_indexes_follow_their_columns_and_only_those(tmp_path: Path) -> None:
    """Version 11: a change of a message's context (relinked when the message before it arrives late)
    re-indexes the word index, not the trigram index, which holds the content alone; a change of the content
    re-indexes both. The data-version counter of a table moves only when the table is written."""
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    migrate(conn)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)") if r[3] and r[4] is None and r[1] != "rowid"]
    row = {c: "x" for c in cols} | {"memory_id": "m1", "layer": "L0", "content": "the billing migration starts",
                                    "context": None, "recorded_at": "2026-01-01T00:00:00+00:00"}
    conn.execute(f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))

    def segments(table: str) -> int:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}_data").fetchone()[0])

    def words(query: str) -> list[str]:
        return [r[0] for r in conn.execute(
            "SELECT m.memory_id FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
            "WHERE memories_fts MATCH ?", (query,))]

    def trigrams(query: str) -> list[str]:
        return [r[0] for r in conn.execute(
            "SELECT m.memory_id FROM memories_fts_tri JOIN memories m ON m.rowid = memories_fts_tri.rowid "
            "WHERE memories_fts_tri MATCH ?", (query,))]

    apply_pending(conn)  # what the triggers queued, indexed (a writer transaction does it before it commits)
    tri_before = segments("memories_fts_tri")
    conn.execute("UPDATE memories SET context=? WHERE memory_id='m1'", ("we talked about invoices",))
    apply_pending(conn)
    assert segments("memories_fts_tri") == tri_before  # the trigram index was not rewritten
    assert words("invoices") == ["m1"] and words("billing") == ["m1"]
    assert trigrams('"migration"') == ["m1"]
    conn.execute("UPDATE memories SET content=? WHERE memory_id='m1'", ("the payroll rollout starts",))
    apply_pending(conn)
    assert trigrams('"payroll"') == ["m1"] and trigrams('"migration"') == []
    assert words("payroll") == ["m1"] and words("billing") == []


def _at_version(conn: sqlite3.Connection, version: int) -> None:
    """A shard as ``version`` left it."""
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for mig in load_migrations()[:version]:
        conn.executescript(f"BEGIN;\n{mig.sql}\nCOMMIT;")
        conn.execute("INSERT INTO schema_version VALUES (?, ?, 'then')", [mig.version, mig.name])


def test_version_13_moves_each_edges_evidence_into_its_table_and_counts_it(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    _at_version(conn, 12)
    for edge_id, evidence in (("e1", '["m1", "m2", "m3"]'), ("e2", "[]"), ("e3", "not json"), ("e4", '["m1", 7]')):
        conn.execute("INSERT INTO graph_edges (edge_id, tenant_id, workspace_id, user_id, agent_id, src_id, dst_id, "
                     "edge_type, evidence, method, recorded_at) VALUES (?, 't', 'w', 'u', 'a', 'n1', 'n2', "
                     "'CO_OCCURS', ?, 'heuristic', 'then')", [edge_id, evidence])
    assert migrate(conn) == LATEST_VERSION
    columns = {r[1] for r in conn.execute("PRAGMA table_info(graph_edges)")}
    assert "evidence" not in columns and "evidence_count" in columns
    assert dict(conn.execute("SELECT edge_id, evidence_count FROM graph_edges").fetchall()) == {
        "e1": 3, "e2": 0, "e3": 0, "e4": 1}  # what was not a list of ids is not evidence
    assert sorted(conn.execute("SELECT edge_id, memory_id FROM graph_edge_evidence").fetchall()) == [
        ("e1", "m1"), ("e1", "m2"), ("e1", "m3"), ("e4", "m1")]
    conn.execute("DELETE FROM graph_edges WHERE edge_id='e1'")  # an edge's evidence goes with it
    assert conn.execute("SELECT COUNT(*) FROM graph_edge_evidence WHERE edge_id='e1'").fetchone()[0] == 0


def test_version_14_keeps_every_tombstone_active_and_naming_no_erasure(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    _at_version(conn, 13)
    conn.execute("INSERT INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, value_hash, normalised_text, "
                 "reason, at, memory_id) VALUES ('t1', 't', 'w', 'u', 'h', '', 'session erased: asked', 'then', 'm1')")
    assert migrate(conn) == LATEST_VERSION
    assert conn.execute("SELECT erasure_id, pending FROM tombstones").fetchall() == [(None, 0)]


def test_a_replay_reads_the_erasures_of_a_shard_of_an_older_version(tmp_path: Path) -> None:
    """Found by a review: what a replay carries over was read with the columns and tables of this version, and a
    data dir of the version before (15) failed with "no such column: forgotten_by"."""
    from altm.store import erasure_rows

    (tmp_path / "shards").mkdir()
    conn = sqlite3.connect(tmp_path / "shards" / "shard-0000.db", isolation_level=None)
    for m in load_migrations()[:15]:
        conn.executescript(m.sql)
    conn.execute("INSERT INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
                 "normalised_text, reason, at, memory_id) VALUES ('tomb_1','t','w','u','a','h','','forgotten: x',"
                 "'2026-12-01','mem_1')")
    conn.close()
    found = erasure_rows(tmp_path)
    assert [(t["tombstone_id"], t["forgotten_by"]) for t in found.tombstones] == [("tomb_1", None)]
    assert found.items == []


def test_an_erased_review_item_is_erased_for_its_own_home_only(tmp_path: Path) -> None:
    """A decision of another user naming an item an erasure removed is refused as naming none, as before: it does
    not learn that the item was erased."""
    from altm.store import ShardSet

    shards = ShardSet(tmp_path, 1)
    try:
        with shards.get(0).transaction() as tx:
            tx.carry_erased_item("rej_0123", "t/w/dana", "prop_erase")
            assert tx.item_erased("rej_0123", "t/w/dana")
            assert not tx.item_erased("rej_0123", "t/w/eve")
    finally:
        shards.close()


def test_version_19_lets_an_erasure_redact_the_trust_reasons_of_audit_rows_written_at_18(tmp_path: Path) -> None:
    """Audit rows written by a shard at version 18 can be reason-redacted (``redacted = 2``, again without harm)
    and then redacted whole; nothing else about an audit row may change, before or after."""
    from altm.store import ShardSet

    data = tmp_path / "data"
    shards = ShardSet(data, 1)
    path = shards.get(0).path
    shards.close()
    for stale in path.parent.glob(f"{path.name}*"):  # the shard file, its WAL: built again at version 18
        stale.unlink()
    conn = sqlite3.connect(path, isolation_level=None)
    _at_version(conn, 18)
    conn.execute("INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
                 "new_value) VALUES ('then', 'p', 'verify', 'update', 'memories', 'm1', "
                 "'{\"trust_contradicting_id\": \"gone\", \"trust_reason\": \"states thursday\"}', '{}')")
    conn.close()
    shards = ShardSet(data, 1)
    try:
        shard = shards.get(0)  # migrated to the latest version as it opens
        with shard.transaction() as tx:
            tx.redact_audit_reasons(["gone"])
            tx.redact_audit_reasons(["gone"])  # a second erasure naming it: no abort
        ((redacted, old),) = shard._db.execute("SELECT redacted, old_value FROM audit_log").fetchall()
        assert redacted == 2 and "thursday" not in old and '"trust_contradicting_id":"gone"' in old
        with pytest.raises(sqlite3.IntegrityError, match="insert-only"):
            shard._db.execute("UPDATE audit_log SET actor='someone else'")
        with shard.transaction() as tx:
            tx.redact_audit("memories", ["m1"])
        assert shard._db.execute("SELECT redacted FROM audit_log").fetchone()[0] == 1
    finally:
        shards.close()


def test_version_22_keys_the_model_cache_by_home_and_keeps_its_entries(tmp_path: Path) -> None:
    """Version 22: an entry is found by the user whose prompt it is (one user's prompt was answered from another
    user's entry); the entries cached before stay, each under its own home."""
    from altm.store._sql import CACHE_GET

    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    for mig in load_migrations()[:21]:
        conn.executescript(f"BEGIN;\n{mig.sql}\nCOMMIT;")
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (21, 'then', 'then')")
    conn.execute("INSERT INTO llm_cache (model, prompt_hash, home, response, recorded_at, sources) "
                 "VALUES ('m', 'p', 'acme/w/dana', '{\"a\":1}', 'then', '[\"mem_1\"]')")
    assert migrate(conn) == LATEST_VERSION
    assert conn.execute(CACHE_GET, ("acme/w/dana", "m", "p")).fetchone() == ('{"a":1}',)
    assert conn.execute(CACHE_GET, ("globex/w/eve", "m", "p")).fetchone() is None
    conn.execute("INSERT INTO llm_cache (model, prompt_hash, home, response, recorded_at) "
                 "VALUES ('m', 'p', 'globex/w/eve', '{\"b\":2}', 'now')")  # the same prompt, another user: its own
    assert conn.execute(CACHE_GET, ("globex/w/eve", "m", "p")).fetchone() == ('{"b":2}',)
    assert conn.execute("SELECT sources FROM llm_cache WHERE home='acme/w/dana'").fetchone() == ('["mem_1"]',)


def test_version_25_keys_each_tombstone_by_its_hashes_and_keeps_them_with_it(tmp_path: Path) -> None:
    from altm.store._migrations import _json_with_key
    from altm.store._text_index import register_index_form

    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    conn.create_function("json_with_key", 3, _json_with_key, deterministic=True)  # as migrate has them
    register_index_form(conn)
    _at_version(conn, 24)
    insert = ("INSERT INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
              "normalised_text, reason, at, shingle_hashes, term_hashes) VALUES (?, 't', 'w', 'u', 'a', 'h', '', 'r', "
              "'then', ?, ?)")
    conn.execute(insert, ["tomb_1", '["sh1", "sh2"]', '["t:ab", "s:cd"]'])
    conn.execute(insert, ["tomb_2", "not json", None])

    def keys() -> list[tuple[str, str]]:
        return [(str(r[0]), str(r[1])) for r in conn.execute(
            "SELECT tombstone_id, key_hash FROM tombstone_keys ORDER BY tombstone_id, key_hash")]

    assert migrate(conn) == LATEST_VERSION
    assert keys() == [("tomb_1", "ab"), ("tomb_1", "cd"), ("tomb_1", "sh1"), ("tomb_1", "sh2")]
    conn.execute(insert, ["tomb_3", '["sh9"]', '["n:ef"]'])  # written after: by the trigger
    conn.execute("UPDATE tombstones SET shingle_hashes='[\"sh3\"]', term_hashes='[]' WHERE tombstone_id='tomb_1'")
    conn.execute("UPDATE tombstones SET pending=0, reason='x' WHERE tombstone_id='tomb_3'")  # its hashes stay
    conn.execute("DELETE FROM tombstones WHERE tombstone_id='tomb_2'")
    assert keys() == [("tomb_1", "sh3"), ("tomb_3", "ef"), ("tomb_3", "sh9")]
    conn.execute("DELETE FROM tombstones WHERE tombstone_id='tomb_3'")
    assert keys() == [("tomb_1", "sh3")]


def test_version_26_stores_each_memorys_place_among_the_messages_of_its_time(tmp_path: Path) -> None:
    from altm.store._conversation import turn_key
    from altm.store._migrations import _json_with_key
    from altm.store._text_index import register_index_form

    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    conn.create_function("json_with_key", 3, _json_with_key, deterministic=True)
    register_index_form(conn)
    _at_version(conn, 25)
    insert = ("INSERT INTO memories (memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, layer, kind, "
              "content, content_hash, source_id, role, attributes, evidence, method, processor, recorded_at) "
              "VALUES (?, 't', 'w', 'u', 'a', 's1', 'L0', 'message', 'x', 'h', ?, ?, ?, '[]', 'verbatim', 'capture', "
              "'then')")
    conn.execute(insert, ["m1", "host-1", "user", '{"turn_id": "s1-t10"}'])
    conn.execute(insert, ["m2", "s1-t2", "assistant", "{}"])
    conn.execute(insert, ["m3", None, None, '{"turn_id": 7}'])  # a turn id that is no text: its source id (none)
    assert migrate(conn) == LATEST_VERSION
    found = dict(conn.execute("SELECT memory_id, turn_key FROM memories").fetchall())
    assert found == {"m1": turn_key("s1-t10", "user"), "m2": turn_key("s1-t2", "assistant"), "m3": turn_key(None, None)}
    assert found["m2"] < found["m1"]  # turn 2 before turn 10


def test_version_28_counts_each_memorys_signals_of_each_kind_whichever_way_they_change(tmp_path: Path) -> None:
    from altm.store._migrations import _json_with_key
    from altm.store._text_index import register_index_form

    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    conn.create_function("json_with_key", 3, _json_with_key, deterministic=True)
    register_index_form(conn)
    conn.create_function("turn_key_of", 3, lambda *_: "", deterministic=True)
    _at_version(conn, 27)
    insert = "INSERT INTO lifecycle_signals (memory_id, signal_id, kind, at, seq) VALUES (?, ?, ?, 'then', ?)"
    for n, (mid, sid, kind) in enumerate([("m1", "a", "injected"), ("m1", "b", "injected"), ("m1", "c", "pin"),
                                          ("m2", "d", "helpful")], start=1):
        conn.execute(insert, [mid, sid, kind, n])
    assert migrate(conn) == LATEST_VERSION

    def counts() -> set[tuple[str, str, int]]:
        return {(str(m), str(k), int(n)) for m, k, n in conn.execute("SELECT memory_id, kind, n FROM signal_counts")}

    assert counts() == {("m1", "injected", 2), ("m1", "pin", 1), ("m2", "helpful", 1)}
    conn.execute(insert, ["m1", "e", "injected", 5])
    conn.execute("DELETE FROM lifecycle_signals WHERE signal_id IN ('c', 'd')")
    conn.execute("UPDATE lifecycle_signals SET kind='helpful' WHERE signal_id='a'")
    assert counts() == {("m1", "injected", 2), ("m1", "helpful", 1)}
