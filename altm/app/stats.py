"""``altm stats`` and ``altm state-hash``: read-only views over a data dir."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from altm.bus.embedded import default_log_path
from altm.core import Kind, Layer
from altm.store import MEMORY_COLUMNS, WALL_CLOCK_COLUMNS, Shard, ShardSet


class DataDirError(RuntimeError):
    pass


def log_topics(data_dir: Path, prefix: str) -> tuple[int, dict[str, int]]:
    """Partition count and per-topic record counts, read from the embedded log (read-only, synchronous)."""
    path = default_log_path(data_dir)
    if not path.exists():
        raise DataDirError(f"{data_dir} is not an ALTM data dir (no {path.name}); run `altm ingest` first")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        topics = dict(conn.execute("SELECT name, partitions FROM topics").fetchall())
        counts = dict(conn.execute("SELECT topic, COUNT(*) FROM records GROUP BY topic").fetchall())
    finally:
        conn.close()
    turns = topics.get(f"{prefix}turns")
    if turns is None:
        raise DataDirError(f"{data_dir}: the log has no {prefix}turns topic")
    return int(turns), {name: int(counts.get(name, 0)) for name in topics}


def collect_stats(data_dir: Path, prefix: str = "altm.") -> dict[str, Any]:
    partitions, counts = log_topics(data_dir, prefix)
    layers = {layer.value: 0 for layer in Layer}
    kinds = {kind.value: 0 for kind in Kind}
    nodes = edges = rejected = audit = memories = 0
    trust: dict[str, int] = {}
    derived = verified_any = 0
    shards = ShardSet(data_dir, partitions, read_only=True)
    try:
        for shard in shards.existing():
            c = shard.conn
            for layer, n in c.execute("SELECT layer, COUNT(*) FROM memories GROUP BY layer"):
                layers[layer] = layers.get(layer, 0) + n
                memories += n
            for kind, n in c.execute("SELECT kind, COUNT(*) FROM memories GROUP BY kind"):
                kinds[kind] = kinds.get(kind, 0) + n
            nodes += c.execute("SELECT COUNT(*) FROM graph_nodes").fetchone()[0]
            edges += c.execute("SELECT COUNT(*) FROM graph_edges").fetchone()[0]
            rejected += c.execute("SELECT COUNT(*) FROM rejections").fetchone()[0]
            audit += c.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0]
            for status, n in c.execute("SELECT trust_status, COUNT(*) FROM memories GROUP BY trust_status"):
                trust[status] = trust.get(status, 0) + n
            d, v = c.execute("SELECT COUNT(*), SUM(trust_verified_at IS NOT NULL) FROM memories "
                             "WHERE layer = 'L2'").fetchone()
            derived += d
            verified_any += v or 0
    finally:
        shards.close()
    return {
        "memories": memories,
        "layers": layers,
        "kinds": kinds,
        "graph": {"nodes": nodes, "edges": edges},
        "dlq": counts.get(f"{prefix}dlq", 0),
        "rejected": rejected,
        "audit_rows": audit,
        "trust": trust,
        "verified_fraction": round(verified_any / derived, 4) if derived else None,
        "partitions": partitions,
        "topics": {k.removeprefix(prefix): v for k, v in sorted(counts.items())},
    }


_HASHED_TABLES: dict[str, tuple[str, ...]] = {
    "memories": tuple(c for c in MEMORY_COLUMNS if c not in WALL_CLOCK_COLUMNS),
    "evidence_edges": ("memory_id", "evidence_id"),
    "graph_nodes": ("node_id", "tenant_id", "workspace_id", "user_id", "agent_id", "node_type", "name",
                    "attributes", "method"),
    "graph_edges": ("edge_id", "src_id", "dst_id", "edge_type", "weight", "confidence", "rejected",
                    "evidence", "method"),
    "tombstones": ("tombstone_id", "tenant_id", "workspace_id", "user_id", "agent_id", "value_hash",
                   "normalised_text", "reason"),
}


def shard_state_rows(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Derived state rows of every shard in ``data_dir`` (wall-clock columns excluded by design), sorted.

    Works on any data dir with shards, whichever runtime wrote them (embedded or a Kafka worker)."""
    out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _HASHED_TABLES}
    paths = sorted((data_dir / "shards").glob("shard-*.db"))
    if not paths:
        raise DataDirError(f"{data_dir} has no shards (expected {data_dir / 'shards'}/shard-NNNN.db)")
    for path in paths:
        shard = Shard(path, int(path.stem.split("-")[1]), read_only=True).open()
        try:
            for table, cols in _HASHED_TABLES.items():
                out[table].extend(
                    tuple(r) for r in shard.conn.execute(f"SELECT {', '.join(cols)} FROM {table}")
                )
        except sqlite3.OperationalError as exc:
            raise DataDirError(f"shard {path} is not initialised yet ({exc}); is a worker starting?") from None
        finally:
            shard.close()
    for rows in out.values():
        rows.sort(key=lambda r: orjson.dumps(r))
    return out


def state_hash(data_dir: Path) -> str:
    """SHA-256 of the derived state, independent of partition count and wall-clock time."""
    digest = hashlib.sha256()
    for table, rows in shard_state_rows(data_dir).items():
        digest.update(table.encode())
        for row in rows:
            digest.update(orjson.dumps(row))
    return digest.hexdigest()


def count_layer(data_dir: Path, layer: str = "L0") -> int:
    """Memories of one layer across the shards; shards still being created count as empty (for waiting)."""
    total = 0
    for path in (data_dir / "shards").glob("shard-*.db"):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            total += conn.execute("SELECT COUNT(*) FROM memories WHERE layer=?", (layer,)).fetchone()[0]
        except sqlite3.OperationalError:
            pass
        finally:
            conn.close()
    return total
