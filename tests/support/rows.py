"""Reading rows straight from a data dir's shards (for assertions)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

EVIDENCE = ("(SELECT json_group_array(memory_id) FROM (SELECT memory_id FROM graph_edge_evidence v "
            "WHERE v.edge_id = graph_edges.edge_id ORDER BY memory_id)) AS evidence")
"""A graph edge's evidence as a JSON list, in a ``SELECT … FROM graph_edges`` (it is a table of its own)."""


def rows(data_dir: Path, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for path in sorted((data_dir / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(path)
        conn.row_factory = sqlite3.Row
        try:
            out += [dict(r) for r in conn.execute(sql, args)]
        finally:
            conn.close()
    return out


def rows_of(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of one SQLite file (the key store, a log)."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def dangling(data_dir: Path) -> list[dict[str, Any]]:
    """Memories whose ``superseded_by`` names a memory no longer there."""
    return rows(data_dir, "SELECT memory_id, superseded_by FROM memories m WHERE superseded_by IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM memories c WHERE c.memory_id = m.superseded_by)")
