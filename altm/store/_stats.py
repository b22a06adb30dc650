"""Counts and the derived-state rows of a data dir's shards, read-only (any runtime may have written them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from altm.core import Kind, Layer
from altm.store._errors import ShardError
from altm.store._rows import MEMORY_COLUMNS, TOMBSTONE_COLUMNS, WALL_CLOCK_COLUMNS
from altm.store._shard import Shard
from altm.store._shardset import shard_files


class DataDirError(RuntimeError):
    """A data dir that cannot be read as asked (missing, not initialised, another schema version)."""


# Derived state, without wall-clock columns or ids that depend on arrival order or on the runtime (rejection
# numbers, source offsets): the same input gives the same rows in either runtime with any partition count.
HASHED_TABLES: dict[str, tuple[str, ...]] = {
    "memories": tuple(c for c in MEMORY_COLUMNS if c not in WALL_CLOCK_COLUMNS),
    "evidence_edges": ("memory_id", "evidence_id"),
    "graph_nodes": ("node_id", "tenant_id", "workspace_id", "user_id", "agent_id", "node_type", "name",
                    "attributes", "method"),
    "graph_edges": ("edge_id", "src_id", "dst_id", "edge_type", "weight", "confidence", "rejected",
                    # its evidence, listed as the edge's row held it before version 13
                    "(SELECT json_group_array(memory_id) FROM (SELECT memory_id FROM graph_edge_evidence v "
                    "WHERE v.edge_id = graph_edges.edge_id ORDER BY memory_id))", "method"),
    "tombstones": ("tombstone_id", "tenant_id", "workspace_id", "user_id", "agent_id", "memory_id", "layer",
                   "reason"),  # its hashes are keyed by a random per-user key: not in the state hash
    "lifecycle_signals": ("memory_id", "signal_id", "kind", "at", "level", "seq", "agent_id", "session_id"),
    "governance_events": ("event_id", "decision_id", "tenant_id", "workspace_id", "user_id", "agent_id",
                          "decision", "step", "inputs", "reason"),
    "held_actions": ("action_id", "tenant_id", "workspace_id", "user_id", "agent_id", "action", "target_ids",
                         "reason", "inputs", "status"),
    "rejections": ("proposal_id", "memory_id", "reason", "payload", "review_status"),  # see _delivery_free
    "runtime_cycles": ("cycle_id", "tenant_id", "workspace_id", "user_id", "agent_id", "session_id", "turn_id",
                       "state", "idempotency_key", "request_hash", "bundle_memory_ids", "token_budget",
                       "commit_hash", "created_at", "closed_at", "abort_reason"),
}


def state_rows(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Derived state rows of every shard in ``data_dir`` (see :data:`HASHED_TABLES`), sorted."""
    out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in HASHED_TABLES}
    files = shard_files(data_dir)
    if not files:
        raise DataDirError(f"{data_dir} has no shards (expected {data_dir / 'shards'}/shard-NNNN.db)")
    for partition, path in files:
        shard = Shard(path, partition, read_only=True)
        try:
            shard.open()
            for table, cols in HASHED_TABLES.items():
                found = [tuple(r) for r in shard._db.execute(f"SELECT {', '.join(cols)} FROM {table}")]
                out[table].extend([_delivery_free(r) for r in found] if table == "rejections" else found)
        except sqlite3.OperationalError as exc:
            raise DataDirError(f"shard {path} is not initialised yet ({exc}); is a worker starting?") from None
        except ShardError as exc:  # another schema version (not migrated yet), or damaged: says which and why
            raise DataDirError(str(exc)) from None
        finally:
            shard.close()
    for rows in out.values():
        rows.sort(key=lambda r: orjson.dumps(r))
    return out


_DELIVERY = ("cause_event_id", "timestamp")
"""A refused proposal's envelope fields that name the event it was derived after: a stage that reads the state
(fold folds a session after a batch's last message, or after an erasure) derives the same proposal after
another event in another run (other batches, another runtime), so they are not state."""


def _delivery_free(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A rejections row (as :data:`HASHED_TABLES` selects it) with its payload's delivery fields left out."""
    payload = row[3]
    try:
        value = orjson.loads(payload) if isinstance(payload, str) and payload.startswith("{") else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict) or not any(k in value for k in _DELIVERY):
        return row
    kept = {k: v for k, v in value.items() if k not in _DELIVERY}
    return (*row[:3], orjson.dumps(kept, option=orjson.OPT_SORT_KEYS).decode(), *row[4:])


def _read_only_shards(data_dir: Path) -> Iterator[Shard]:
    """Each shard of ``data_dir``, opened read-only, closed when the caller moves on."""
    for partition, path in shard_files(data_dir):
        shard = Shard(path, partition, read_only=True).open()
        try:
            yield shard
        finally:
            shard.close()


def shard_counts(data_dir: Path) -> dict[str, Any]:
    """Counts per layer and kind, graph size, rejections, audit rows and trust, over every shard."""
    layers = {layer.value: 0 for layer in Layer}
    kinds = {kind.value: 0 for kind in Kind}
    totals = {"memories": 0, "nodes": 0, "edges": 0, "rejected": 0, "audit": 0, "derived": 0, "verified": 0}
    trust: dict[str, int] = {}
    for shard in _read_only_shards(data_dir):
        c = shard._db
        for layer, n in c.execute("SELECT layer, COUNT(*) FROM memories GROUP BY layer"):
            layers[layer] = layers.get(layer, 0) + n
            totals["memories"] += n
        for kind, n in c.execute("SELECT kind, COUNT(*) FROM memories GROUP BY kind"):
            kinds[kind] = kinds.get(kind, 0) + n
        for key, table in (("nodes", "graph_nodes"), ("edges", "graph_edges"), ("rejected", "rejections"),
                           ("audit", "audit_log")):
            totals[key] += c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for status, n in c.execute("SELECT trust_status, COUNT(*) FROM memories GROUP BY trust_status"):
            trust[status] = trust.get(status, 0) + n
        d, v = c.execute("SELECT COUNT(*), SUM(trust_verified_at IS NOT NULL) FROM memories "
                         "WHERE layer = 'L2'").fetchone()
        totals["derived"] += d
        totals["verified"] += v or 0
    return {"layers": layers, "kinds": kinds, "trust": trust, **totals}


FRESHNESS_SAMPLE = 20_000
"""The most recently stored memories per layer and shard that freshness figures are taken over."""


def freshness_seconds(data_dir: Path, per_layer: int = FRESHNESS_SAMPLE) -> dict[str, list[float]]:
    """Per layer, seconds from a memory's source turn being published to the writer storing it (word-searchable
    for L0, derived for L1-L4), over the most recently stored memories that know their source's publish time."""
    out: dict[str, list[float]] = {layer.value: [] for layer in Layer}
    for shard in _read_only_shards(data_dir):
        for layer in out:
            out[layer] += [max(0.0, float(s)) for (s,) in shard._db.execute(
                "SELECT ((julianday(recorded_at) - 2440587.5) * 86400000.0 - source_ms) / 1000.0 FROM memories "
                "WHERE layer = ? AND source_ms IS NOT NULL ORDER BY recorded_at DESC LIMIT ?", (layer, per_layer))]
    return out


def source_times(data_dir: Path, layer: str = "L0", limit: int = FRESHNESS_SAMPLE) -> dict[str, int]:
    """Memory id → the publish time of its source turn (ms), for the most recently stored memories of ``layer``
    (per shard) that know it: joined with the vector index's ``indexed_ms``, the delay to vector-searchable."""
    out: dict[str, int] = {}
    for shard in _read_only_shards(data_dir):
        out.update((str(m), int(s)) for m, s in shard._db.execute(
            "SELECT memory_id, source_ms FROM memories WHERE layer = ? AND source_ms IS NOT NULL "
            "ORDER BY recorded_at DESC LIMIT ?", (layer, limit)))
    return out


def count_layer(data_dir: Path, layer: str = "L0") -> int:
    """Memories of one layer across the shards; shards still being created count as empty (for waiting)."""
    total = 0
    for _, path in shard_files(data_dir):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            total += int(conn.execute("SELECT COUNT(*) FROM memories WHERE layer=?", (layer,)).fetchone()[0])
        except sqlite3.OperationalError:
            pass
        finally:
            conn.close()
    return total


def llm_cache_rows(data_dir: Path) -> list[tuple[str, str, str, str, str, str | None]]:
    """Every cached model answer of a data dir: (model, prompt hash, home, response, recorded at, sources: the
    JSON list of memory ids its prompt held, None when not known)."""
    out: list[tuple[str, str, str, str, str, str | None]] = []
    for _, path in shard_files(data_dir):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            known = any(row[1] == "sources" for row in conn.execute("PRAGMA table_info(llm_cache)"))
            out += [(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), None if r[5] is None else str(r[5]))
                    for r in conn.execute("SELECT model, prompt_hash, home, response, recorded_at, "
                                          f"{'sources' if known else 'NULL'} FROM llm_cache")]
        finally:
            conn.close()
    return out


@dataclass(frozen=True)
class ErasureRows:
    """What a data dir remembers of its erasures (see :func:`erasure_rows`)."""

    tombstones: list[dict[str, Any]]
    guard_keys: list[tuple[str, bytes]]  # (home, key)
    items: list[tuple[str, str, str]]  # (review item id, home, erasure id) of the review items erased


def erasure_rows(data_dir: Path) -> ErasureRows:
    """What a data dir remembers of its erasures: its tombstones (keyed hashes, no text), the per-user guard
    keys the hashes are made with, and the review items they removed. A replay carries them over, so an
    erasure holds whatever the replay's start point and whether or not the erased records still open."""
    out = ErasureRows([], [], [])
    for _, path in shard_files(data_dir):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:  # a shard of an older version has fewer columns (NULL) and no erased items
            have = {str(r[1]) for r in conn.execute("PRAGMA table_info(tombstones)")}
            picked = ", ".join(c if c in have else f"NULL AS {c}" for c in TOMBSTONE_COLUMNS)
            out.tombstones.extend(dict(r) for r in conn.execute(f"SELECT {picked} FROM tombstones"))
            out.guard_keys.extend((str(r[0]), bytes(r[1])) for r in conn.execute("SELECT home, key FROM guard_keys"))
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='erased_items'").fetchone():
                out.items.extend((str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(
                    "SELECT item_id, home, erasure_id FROM erased_items"))
        finally:
            conn.close()
    return out
