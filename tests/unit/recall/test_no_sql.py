"""SQL lives in the store: recall asks ``altm.store`` (``SearchQueries``) and never holds a connection.

The test reads recall's source: no ``sqlite3`` import, no ``.conn`` attribute, and no string that reads as a
SQL statement or an FTS5 ranking function.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import altm.recall

SQL = re.compile(r"\b(?:SELECT|INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|CREATE\s+\w+|WHERE|PRAGMA|MATCH)\b"
                 r"|\bbm25\(")


def _modules() -> list[Path]:
    return sorted(Path(altm.recall.__file__).parent.rglob("*.py"))


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(n and n.split(".")[0] == "sqlite3" for n in names):
                out.append(f"{node.lineno}: imports sqlite3")
        elif isinstance(node, ast.Attribute) and node.attr in {"conn", "_conn"}:
            out.append(f"{node.lineno}: touches .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            out.append(f"{node.lineno}: SQL text {node.value[:60]!r}")
    return out


def test_recall_holds_no_sql_and_no_connection() -> None:
    found = {str(p): v for p in _modules() if (v := _violations(p))}
    assert _modules() and not found, found


def test_the_scanner_sees_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('import sqlite3\nrows = shard.conn.execute(f"SELECT x FROM memories WHERE id = {i}")\n')
    assert [v.split(":")[0] for v in _violations(sample)] == ["1", "2", "2"]
