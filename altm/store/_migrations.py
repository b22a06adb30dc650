"""Versioned SQL migrations for the shard (``sql/NNNN_name.sql``), applied in order."""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources

import orjson

from altm.store._conversation import turn_key_of
from altm.store._errors import ShardError
from altm.store._text_index import (
    apply_pending,
    built_with,
    index_again_if_built_otherwise,
    indexes_current,
    register_index_form,
)

log = logging.getLogger("altm.store")
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    out = []
    for entry in resources.files("altm.store").joinpath("sql").iterdir():
        match = _NAME.match(entry.name)
        if match:
            out.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    out.sort(key=lambda m: m.version)
    versions = [m.version for m in out]
    if versions != list(range(1, len(out) + 1)):
        raise RuntimeError(f"shard migrations must be numbered 1..n without gaps, got {versions}")
    return out


LATEST_VERSION = len(load_migrations())


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at TEXT NOT NULL)"
    )
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def _json_with_key(document: str | None, key: str, value: object) -> str | None:
    """``document`` (a JSON object) with ``key`` set to ``value`` (left as it is when ``value`` is NULL), keys
    sorted as the writer writes a JSON column."""
    if document is None or value is None:
        return document
    obj = orjson.loads(document)
    if not isinstance(obj, dict):
        return document
    return orjson.dumps({**obj, key: value}, option=orjson.OPT_SORT_KEYS).decode()


def migrate(conn: sqlite3.Connection) -> int:
    """Apply pending migrations, each in its own transaction; returns the resulting version."""
    conn.create_function("json_with_key", 3, _json_with_key, deterministic=True)  # data migrations use it
    conn.create_function("turn_key_of", 3, turn_key_of, deterministic=True)
    register_index_form(conn)  # the text indexes are written through it
    version = current_version(conn)
    migrated = False
    began: float | None = None
    if version > LATEST_VERSION:
        raise ShardError(f"shard schema version {version} is newer than this ALTM ({LATEST_VERSION}); upgrade ALTM")
    for mig in load_migrations():
        if mig.version <= version:
            continue
        if not migrated and version > 0:  # an existing shard: say so, some migrations re-index every row
            log.info("migrating shard %s from schema version %d to %d", _path_of(conn), version, LATEST_VERSION)
            began = time.perf_counter()
        now = datetime.now(UTC).isoformat()
        conn.executescript(
            f"BEGIN;\n{mig.sql}\nINSERT INTO schema_version (version, name, applied_at) "
            f"VALUES ({mig.version}, '{mig.name}', '{now}');\nCOMMIT;"
        )
        version = mig.version
        migrated = True
    if migrated and began is not None:
        log.info("migrated shard %s to schema version %d in %.1f s", _path_of(conn), version,
                 time.perf_counter() - began)
    _text_indexes_current(conn)
    return version


def _text_indexes_current(conn: sqlite3.Connection) -> None:
    """The text indexes as this process builds them: indexed again when they were built otherwise (another rule,
    Unicode or SQLite version, or migration 24 rebuilt the word index), else what the migrations' statements
    queued, indexed; nothing (no write lock taken) when nothing is to do."""
    if indexes_current(conn):
        return
    began = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    try:
        again = index_again_if_built_otherwise(conn)
        if not again:
            apply_pending(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if again and conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None:
        log.info("indexed the text of shard %s again (%s) in %.1f s", _path_of(conn), built_with(),
                 time.perf_counter() - began)


def _path_of(conn: sqlite3.Connection) -> str:
    """The file of ``conn``'s main database (for a log line)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row is not None and row[2] else ":memory:"
