from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from altm.schemas.migrations import LATEST_VERSION, current_version, load_migrations, migrate


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
