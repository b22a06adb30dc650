"""Audit everywhere: every change to memory state goes through the shard transaction and is audited first.

The test reads the package's source:

* a SQL statement that changes a state table may only sit in a method of :class:`ShardTx` (the one way to
  mutate a shard);
* such a method writes its audit row (``self._audit(...)``) before the statement, unless it is in the short,
  justified allowlist below;
* the pipeline (processors, writer, guard) holds no SQL at all: it asks the store.

A new unaudited or out-of-place path fails it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import altm

ROOT = Path(altm.__file__).parent
SHARD_TX = ROOT / "store" / "_tx"  # the transaction, one module per concern (ShardTx and the classes it extends)
STATE_TABLES = ("memories", "evidence_edges", "graph_nodes", "graph_edges", "graph_edge_evidence", "tombstones",
                "held_actions",
                "rejections", "lifecycle_signals", "governance_events", "{table}")
MUTATION = re.compile(r"\b(?:UPDATE|DELETE\s+FROM|INSERT(?:\s+OR\s+\w+)?\s+INTO)\s+(" +
                      "|".join(re.escape(t) for t in STATE_TABLES) + r")\b", re.IGNORECASE)
SQL = re.compile(r"\b(?:SELECT\s.*\bFROM|UPDATE\s+\S+\s+SET|DELETE\s+FROM|INSERT(?:\s+OR\s+\w+)?\s+INTO)\b",
                 re.DOTALL)  # SQL is written in upper case here; prose is not
# ShardTx methods allowed to mutate without an audit row of their own, and why.
ALLOWED = {
    "add_rejection": "a rejection row is itself the insert-only record of a refused write",
    "record_decision": "governance events are themselves the insert-only record of a decision's steps",
}


def _sql_texts(node: ast.AST) -> list[tuple[int, str]]:
    """String constants and f-strings (with ``{name}`` for their placeholders) inside ``node``."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append((n.lineno, n.value))
        elif isinstance(n, ast.JoinedStr):
            parts = []
            for v in n.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name):
                    parts.append("{" + v.value.id + "}")
                else:
                    parts.append("{}")
            out.append((n.lineno, "".join(parts)))
    return out


def _audit_lines(fn: ast.AST) -> list[int]:
    """Lines where ``fn`` calls ``self._audit``."""
    return [n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "_audit" and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"]


def _methods(source: str, class_name: str) -> dict[str, ast.FunctionDef]:
    (cls,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == class_name]
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _tx_methods() -> dict[Path, dict[str, ast.FunctionDef]]:
    """The methods of the shard transaction's classes (``ShardTx`` and its ``_Tx…`` bases), by module."""
    out: dict[Path, dict[str, ast.FunctionDef]] = {}
    for path in sorted(SHARD_TX.glob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)
                    and (n.name == "ShardTx" or n.name.startswith("_Tx"))]:
            out.setdefault(path, {}).update(_methods(path.read_text(), cls.name))
    return out


def unaudited(methods: dict[str, ast.FunctionDef]) -> tuple[list[str], list[str]]:
    """(every state mutation, those not preceded by an audit row in their method)."""
    found: list[str] = []
    missing: list[str] = []
    for name, fn in methods.items():
        audits = _audit_lines(fn)
        for lineno, text in _sql_texts(fn):
            if MUTATION.search(text):
                found.append(f"{name}:{lineno}")
                if name not in ALLOWED and not any(line <= lineno for line in audits):
                    missing.append(f"{name}:{lineno}")
    return found, missing


def test_every_state_mutation_of_the_shard_transaction_is_audited_first() -> None:
    methods = {name: fn for found in _tx_methods().values() for name, fn in found.items()}
    assert len(methods) >= 120, sorted(methods)  # every part of the transaction is read
    found, missing = unaudited(methods)
    assert len(found) >= 15, found  # the scan sees the transaction's paths (a broken scan must not pass)
    assert missing == [], f"state mutations without an audit row before them: {missing}"


def test_state_mutations_live_only_in_the_shard_transaction() -> None:
    tx_lines = {(path, n.lineno) for path, methods in _tx_methods().items() for fn in methods.values()
                for n in ast.walk(fn) if hasattr(n, "lineno")}
    elsewhere = []
    for path in sorted(ROOT.rglob("*.py")):
        for lineno, text in _sql_texts(ast.parse(path.read_text())):
            if MUTATION.search(text) and (path, lineno) not in tx_lines:
                elsewhere.append(f"{path.relative_to(ROOT)}:{lineno}")
    assert elsewhere == [], f"state mutations outside ShardTx: {elsewhere}"


def test_the_scan_catches_an_unaudited_or_late_audited_delete() -> None:
    source = (
        "class ShardTx:\n"
        "    def forget(self):\n"
        "        self._db.execute('DELETE FROM memories WHERE memory_id=?', ('x',))\n"
        "    def late(self):\n"
        "        self._db.execute('DELETE FROM graph_edges WHERE edge_id=?', ('x',))\n"
        "        self._audit(table='graph_edges')\n"
        "    def audited(self):\n"
        "        self._audit(table='memories')\n"
        "        self._db.execute('DELETE FROM memories WHERE memory_id=?', ('x',))\n"
    )
    found, missing = unaudited(_methods(source, "ShardTx"))
    assert found == ["forget:3", "late:5", "audited:9"]
    assert missing == ["forget:3", "late:5"]
    assert SQL.search("SELECT memory_id FROM memories") and not SQL.search("select the best memory")
