"""Audit everywhere: every code path that inserts, updates or deletes memory state writes an audit row.

The test reads the package's source: each SQL statement that changes a state table must sit in a function
that writes an audit row first (or in the short, justified allowlist below). A new unaudited path fails it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import altm

STATE_TABLES = ("memories", "evidence_edges", "graph_nodes", "graph_edges", "tombstones", "deferred_actions",
                "rejections", "lifecycle_signals", "{table}")
MUTATION = re.compile(r"\b(?:UPDATE|DELETE\s+FROM|INSERT(?:\s+OR\s+\w+)?\s+INTO)\s+(" +
                      "|".join(re.escape(t) for t in STATE_TABLES) + r")\b", re.IGNORECASE)
# Functions allowed to mutate without their own audit row, and why.
ALLOWED = {
    "add_rejection": "a rejection row is itself the insert-only record of a refused write",
}


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _sql_texts(fn: ast.AST) -> list[tuple[int, str]]:
    """String constants and f-strings (with ``{name}`` for their placeholders) inside ``fn``."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name):
                    parts.append("{" + v.value.id + "}")
                else:
                    parts.append("{}")
            out.append((node.lineno, "".join(parts)))
    return out


def test_every_state_mutation_is_audited() -> None:
    root = Path(altm.__file__).parent
    found: list[str] = []
    unaudited: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        for fn in _functions(tree):
            body = ast.get_source_segment(source, fn) or ""
            for lineno, text in _sql_texts(fn):
                if MUTATION.search(text):
                    where = f"{path.relative_to(root)}:{lineno} {fn.name}"
                    found.append(where)
                    if fn.name not in ALLOWED and ".audit(" not in body:
                        unaudited.append(where)
    assert len(found) >= 12, found  # the scan sees the writer's paths (a broken scan must not pass)
    assert unaudited == [], f"state mutations without an audit row: {unaudited}"


def test_the_scan_catches_an_unaudited_delete(tmp_path: Path) -> None:
    source = 'def forget(conn):\n    conn.execute("DELETE FROM memories WHERE memory_id=?", ("x",))\n'
    tree = ast.parse(source)
    (fn,) = _functions(tree)
    hits = [n for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and MUTATION.search(n.value)]
    assert hits and ".audit(" not in (ast.get_source_segment(source, fn) or "")
