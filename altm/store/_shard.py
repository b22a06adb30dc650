"""One SQLite shard per partition: memories, graph, FTS, audit, tombstones, offsets and the outbox.

Reads are open to everyone; mutations happen only inside :meth:`Shard.transaction`, which the writer uses.
Every mutation helper here writes its audit row first, in the same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import orjson

from altm.store._migrations import LATEST_VERSION, migrate
from altm.store._rows import MEMORY_COLUMNS


class ShardError(RuntimeError):
    pass


_TEXT_FIELDS = ("content", "context", "attributes", "trust_reason", "name", "label", "normalised_text", "compressed",
                "response", "bundle")


def redacted(row: dict[str, Any]) -> dict[str, Any]:
    """A row whose text fields are replaced by their SHA-256 (what an erasure may keep)."""
    import hashlib

    out = dict(row)
    for f in _TEXT_FIELDS:
        if isinstance(out.get(f), str):
            out[f] = {"redacted_sha256": hashlib.sha256(out[f].encode()).hexdigest()}
    return out


def _redact_json(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    return orjson.dumps(redacted(obj) if isinstance(obj, dict) else obj, option=orjson.OPT_SORT_KEYS).decode()


class Shard:
    def __init__(self, path: str | Path, partition: int, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.partition = partition
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._in_tx = False

    def open(self) -> Shard:
        if self._conn is not None:
            return self
        if self.read_only:
            if not self.path.exists():
                raise ShardError(f"no shard at {self.path}")
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
            version = conn.execute(
                "SELECT MAX(version) FROM schema_version").fetchone()[0] if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() else 0
            if version != LATEST_VERSION:
                conn.close()
                raise ShardError(
                    f"shard {self.path} has schema version {version}, this ALTM reads {LATEST_VERSION}: open the "
                    "data dir once for writing (e.g. `altm sweep --data-dir DIR`) to migrate it")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn)
        conn.execute("PRAGMA busy_timeout=5000")
        conn.create_function("redact_json", 1, _redact_json, deterministic=True)
        conn.row_factory = sqlite3.Row
        self._conn = conn
        return self

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ShardError(f"shard {self.path} is not open")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise ShardError("shard opened read-only")
        if self._in_tx:
            raise ShardError("nested shard transaction")
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False

    def _require_tx(self) -> sqlite3.Connection:
        if not self._in_tx:
            raise ShardError("mutations need a writer transaction (Shard.transaction)")
        return self.conn

    # -- reads -----------------------------------------------------------------------------------------
    def memory_row(self, memory_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM memories WHERE memory_id=?", (memory_id,)).fetchone()
        return None if row is None else {k: row[k] for k in MEMORY_COLUMNS}

    def next_offset(self, group_id: str, topic: str, partition: int) -> int | None:
        row = self.conn.execute(
            "SELECT next_offset FROM consumer_offsets WHERE group_id=? AND topic=? AND partition=?",
            (group_id, topic, partition),
        ).fetchone()
        return None if row is None else int(row[0])

    def bound_log(self) -> str | None:
        """The identity of the log whose offsets this shard stores (None until a writer binds it)."""
        row = self.conn.execute("SELECT value FROM shard_meta WHERE key = 'log'").fetchone()
        return None if row is None else str(row[0])

    def bind_log(self, identity: str) -> None:
        """Record the log this shard's offsets belong to (once; a different one is refused by the caller)."""
        if self.read_only:
            raise ShardError("shard opened read-only")
        self.conn.execute("INSERT OR IGNORE INTO shard_meta (key, value) VALUES ('log', ?)", (identity,))

    def has_offsets(self) -> bool:
        return self.conn.execute("SELECT 1 FROM consumer_offsets LIMIT 1").fetchone() is not None

    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, str, str | None, bytes]]:
        rows = self.conn.execute(
            "SELECT seq, topic, key, value FROM outbox WHERE published=0 ORDER BY seq LIMIT ?", (limit,)
        ).fetchall()
        return [(int(r[0]), str(r[1]), r[2], bytes(r[3])) for r in rows]

    # -- mutations (writer only, inside a transaction) -------------------------------------------------
    def audit(
        self, *, at: str, proposal_id: str | None, actor: str, action: str, table: str, target_id: str,
        old: Any, new: Any,
    ) -> None:
        conn = self._require_tx()
        conn.execute(
            "INSERT INTO audit_log (at, proposal_id, actor, action, target_table, target_id, old_value, "
            "new_value) VALUES (?,?,?,?,?,?,?,?)",
            (
                at, proposal_id, actor, action, table, target_id,
                None if old is None else orjson.dumps(old, option=orjson.OPT_SORT_KEYS).decode(),
                None if new is None else orjson.dumps(new, option=orjson.OPT_SORT_KEYS).decode(),
            ),
        )

    def insert_memory(self, row: dict[str, Any], *, at: str, proposal_id: str, actor: str) -> None:
        conn = self._require_tx()
        self.audit(
            at=at, proposal_id=proposal_id, actor=actor, action="insert", table="memories",
            target_id=row["memory_id"], old=None, new=row,
        )
        cols = ", ".join(MEMORY_COLUMNS)
        marks = ", ".join("?" for _ in MEMORY_COLUMNS)
        conn.execute(f"INSERT INTO memories ({cols}) VALUES ({marks})", [row[c] for c in MEMORY_COLUMNS])
        conn.executemany(
            "INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
            [(row["memory_id"], ev) for ev in orjson.loads(row["evidence"])],
        )

    def update_memory(
        self, old: dict[str, Any], new: dict[str, Any], *, at: str, proposal_id: str, actor: str
    ) -> None:
        conn = self._require_tx()
        self.audit(
            at=at, proposal_id=proposal_id, actor=actor, action="update", table="memories",
            target_id=old["memory_id"], old=old, new=new,
        )
        changed = [c for c in MEMORY_COLUMNS if c != "memory_id" and old[c] != new[c]]
        if changed:
            sets = ", ".join(f"{c}=?" for c in changed)
            conn.execute(
                f"UPDATE memories SET {sets} WHERE memory_id=?", [new[c] for c in changed] + [old["memory_id"]]
            )
        if "evidence" in changed:
            conn.execute("DELETE FROM evidence_edges WHERE memory_id=?", (old["memory_id"],))
            conn.executemany(
                "INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
                [(old["memory_id"], ev) for ev in orjson.loads(new["evidence"])],
            )

    def row(self, table: str, key_column: str, key: str) -> dict[str, Any] | None:
        r = self.conn.execute(f"SELECT * FROM {table} WHERE {key_column}=?", (key,)).fetchone()
        return None if r is None else dict(r)

    def put_row(
        self, table: str, key_column: str, row: dict[str, Any], old: dict[str, Any] | None, *, at: str,
        proposal_id: str, actor: str,
    ) -> None:
        """Insert or replace one row of a graph/governance table, audited with its old value."""
        conn = self._require_tx()
        self.audit(
            at=at, proposal_id=proposal_id, actor=actor, action="insert" if old is None else "update",
            table=table, target_id=row[key_column], old=old, new=row,
        )
        cols = list(row)
        if old is None:
            conn.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                [row[c] for c in cols],
            )
        else:
            sets = ", ".join(f"{c}=?" for c in cols if c != key_column)
            conn.execute(
                f"UPDATE {table} SET {sets} WHERE {key_column}=?",
                [row[c] for c in cols if c != key_column] + [row[key_column]],
            )

    def delete_memory(self, row: dict[str, Any], *, at: str, proposal_id: str, actor: str,
                      redact: bool = True) -> None:
        """Delete one memory (FTS rows go with it through the triggers), audited first: an erasure keeps
        only hashes of the removed value, forgetting keeps the value itself."""
        conn = self._require_tx()
        self.audit(at=at, proposal_id=proposal_id, actor=actor, action="erase" if redact else "forget",
                   table="memories", target_id=row["memory_id"], old=redacted(row) if redact else row, new=None)
        conn.execute("DELETE FROM memories WHERE memory_id=?", (row["memory_id"],))

    def tombstone(self, row: dict[str, Any], *, reason: str, at: str, value_hash: str) -> None:
        from altm.core import derive_id, normalise_text

        conn = self._require_tx()
        tid = derive_id("tomb", row["tenant_id"], row["workspace_id"], row["user_id"], value_hash)
        self.audit(at=at, proposal_id=None, actor="writer", action="insert", table="tombstones", target_id=tid,
                   old=None, new={"value_hash": value_hash, "reason": reason})
        conn.execute(
            "INSERT OR IGNORE INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
            "normalised_text, reason, at) VALUES (?,?,?,?,?,?,?,?,?)",
            (tid, row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"], value_hash,
             normalise_text(row["content"]), reason, at),
        )

    def redact_audit(self, table: str, ids: list[str]) -> None:
        """Replace the text values of earlier audit rows about ``ids`` by their hashes (rows stay)."""
        conn = self._require_tx()
        for start in range(0, len(ids), 400):
            chunk = ids[start : start + 400]
            conn.execute(
                "UPDATE audit_log SET old_value = redact_json(old_value), new_value = redact_json(new_value), "
                f"redacted = 1 WHERE redacted = 0 AND target_table = ? AND target_id IN "
                f"({', '.join('?' for _ in chunk)})", [table, *chunk])

    def scrub(self, home: list[str], memory_ids: list[str], *, all_cache: bool, at: str, proposal_id: str) -> None:
        """After an erasure: edges, CCR entries, cycle bundles, the user's LLM cache and the audit values
        that still held the erased content. Every deletion is audited (values redacted)."""
        conn = self._require_tx()
        for start in range(0, len(memory_ids), 400):
            chunk = memory_ids[start : start + 400]
            marks = ", ".join("?" for _ in chunk)
            for table, key, where in (
                ("evidence_edges", "memory_id", f"memory_id IN ({marks}) OR evidence_id IN ({marks})"),
                ("graph_edges", "edge_id", f"src_id IN ({marks}) OR dst_id IN ({marks})"),
                ("ccr_entries", "marker", f"memory_id IN ({marks}) OR memory_id IN ({marks})"),
            ):
                for r in conn.execute(f"SELECT * FROM {table} WHERE {where}", [*chunk, *chunk]).fetchall():
                    d = dict(r)
                    self.audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table=table,
                               target_id=str(d.get(key) or f"{d.get('memory_id')}->{d.get('evidence_id')}"),
                               old=redacted(d), new=None)
                conn.execute(f"DELETE FROM {table} WHERE {where}", [*chunk, *chunk])
        self.redact_audit("memories", memory_ids)
        orphans = conn.execute(
            "SELECT * FROM graph_nodes n WHERE tenant_id=? AND workspace_id=? AND user_id=? AND NOT EXISTS "
            "(SELECT 1 FROM graph_edges e WHERE e.src_id = n.node_id OR e.dst_id = n.node_id)", home).fetchall()
        for r in orphans:
            self.audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table="graph_nodes",
                       target_id=r["node_id"], old=redacted(dict(r)), new=None)
            conn.execute("DELETE FROM graph_nodes WHERE node_id=?", (r["node_id"],))
        self.redact_audit("graph_nodes", [r["node_id"] for r in orphans])
        conn.execute("UPDATE runtime_cycles SET bundle = NULL WHERE tenant_id=? AND workspace_id=? AND user_id=?",
                     home)
        if all_cache:
            n = conn.execute("SELECT COUNT(*) FROM llm_cache WHERE home=?", ("/".join(home),)).fetchone()[0]
            if n:
                self.audit(at=at, proposal_id=proposal_id, actor="writer", action="erase", table="llm_cache",
                           target_id="/".join(home), old={"entries": n}, new=None)
                conn.execute("DELETE FROM llm_cache WHERE home=?", ("/".join(home),))

    _KEYS: ClassVar[dict[str, str]] = {"memories": "memory_id", "graph_nodes": "node_id", "graph_edges": "edge_id",
             "deferred_actions": "action_id", "tombstones": "tombstone_id"}

    def restore(self, table: str, target_id: str, old: dict[str, Any] | None, new: dict[str, Any] | None, *,
                at: str, proposal_id: str) -> str:
        """Undo one audited change (rollback): the row goes back to ``old`` (or away if it had none).
        Every restoration is audited in turn. Returns "removed", "restored" or "reinserted"."""
        conn = self._require_tx()
        if table == "memories":
            current = self.memory_row(target_id)
            if old is None:
                if current is not None:
                    self.delete_memory(current, at=at, proposal_id=proposal_id, actor="rollback", redact=False)
                return "removed"
            if current is None:
                self.insert_memory(old, at=at, proposal_id=proposal_id, actor="rollback")
                return "reinserted"
            self.update_memory(current, old, at=at, proposal_id=proposal_id, actor="rollback")
            return "restored"
        if table in self._KEYS:
            key = self._KEYS[table]
            current = self.row(table, key, target_id)
            if old is None:
                if current is not None:
                    self.audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete", table=table,
                               target_id=target_id, old=current, new=None)
                    conn.execute(f"DELETE FROM {table} WHERE {key}=?", (target_id,))
                return "removed"
            self.put_row(table, key, old, current, at=at, proposal_id=proposal_id, actor="rollback")
            return "restored" if current is not None else "reinserted"
        if table == "evidence_edges" and old is not None:
            self.audit(at=at, proposal_id=proposal_id, actor="rollback", action="insert", table=table,
                       target_id=target_id, old=None, new=old)
            conn.execute("INSERT OR IGNORE INTO evidence_edges (memory_id, evidence_id) VALUES (?,?)",
                         (old["memory_id"], old["evidence_id"]))
            return "reinserted"
        if table == "lifecycle_signals" and new is not None:
            self.audit(at=at, proposal_id=proposal_id, actor="rollback", action="delete", table=table,
                       target_id=target_id, old=new, new=None)
            conn.execute("DELETE FROM lifecycle_signals WHERE memory_id=? AND signal_id=? AND kind=?",
                         (target_id, new["signal_id"], new["kind"]))
            return "removed"
        if table == "rejections" and old is not None:
            self.audit(at=at, proposal_id=proposal_id, actor="rollback", action="update", table=table,
                       target_id=target_id, old=new, new=old)
            conn.execute("UPDATE rejections SET review_status=? WHERE rejection_id=?",
                         (old["review_status"], int(target_id.removeprefix("rej_"))))
            return "restored"
        raise ShardError(f"cannot roll back a change to {table}")

    def add_rejection(
        self, *, at: str, proposal_id: str | None, memory_id: str | None, reason: str,
        source: tuple[str, int, int] | None, payload: str | None,
    ) -> None:
        conn = self._require_tx()
        topic, part, off = source if source is not None else (None, None, None)
        conn.execute(
            "INSERT INTO rejections (proposal_id, memory_id, reason, source_topic, source_partition, "
            "source_offset, payload, at) VALUES (?,?,?,?,?,?,?,?)",
            (proposal_id, memory_id, reason, topic, part, off, payload, at),
        )

    def store_offset(self, group_id: str, topic: str, partition: int, next_offset: int) -> None:
        self._require_tx().execute(
            "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) VALUES (?,?,?,?) "
            "ON CONFLICT(group_id, topic, partition) DO UPDATE SET next_offset=excluded.next_offset",
            (group_id, topic, partition, next_offset),
        )

    def enqueue(self, topic: str, key: str | None, value: bytes) -> None:
        self._require_tx().execute("INSERT INTO outbox (topic, key, value) VALUES (?,?,?)", (topic, key, value))

    def mark_published(self, up_to_seq: int) -> None:
        # Outbox bookkeeping, not memory state: it records delivery, so it is not audited.
        self.conn.execute("UPDATE outbox SET published=1 WHERE published=0 AND seq<=?", (up_to_seq,))
