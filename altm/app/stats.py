"""``altm stats`` and ``altm state-hash``: read-only views over a data dir."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from altm.bus import BusError
from altm.bus.embedded import default_log_path, log_topics
from altm.store import DataDirError, freshness_seconds, shard_counts, shard_files, source_times, state_rows

__all__ = ["DataDirError", "collect_stats", "figures", "freshness", "partitions_of", "percentile", "state_hash",
           "vector_freshness"]


def partitions_of(data_dir: Path, prefix: str) -> tuple[int, dict[str, int]]:
    """Partition count and per-topic record counts of a data dir's embedded log."""
    path = default_log_path(data_dir)
    if not path.exists():
        raise DataDirError(f"{data_dir} is not an ALTM data dir (no {path.name}); run `altm ingest` first")
    try:
        topics, counts = log_topics(path)
    except BusError as exc:
        raise DataDirError(str(exc)) from None
    turns = topics.get(f"{prefix}turns")
    if turns is None:
        raise DataDirError(f"{data_dir}: the log has no {prefix}turns topic")
    return turns, counts


KAFKA_RECORD = "deployment.json"
"""What a Kafka worker leaves in its data dir (its bus; the log is the broker's, not counted here)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def figures(seconds: Sequence[float]) -> dict[str, float | int]:
    return {"count": len(seconds), "p50_s": round(percentile(seconds, 0.5), 3),
            "p95_s": round(percentile(seconds, 0.95), 3)}


def freshness(data_dir: Path) -> dict[str, dict[str, float | int]]:
    """p50/p95 per layer of the seconds from a turn's publication to the writer storing what comes from it:
    word-searchable for L0, derived for L1-L4 (vector-searchable: :func:`vector_freshness`)."""
    return {layer: figures(seconds) for layer, seconds in freshness_seconds(data_dir).items() if seconds}


def vector_freshness(data_dir: Path, indexed_ms: Mapping[str, object]) -> dict[str, float | int] | None:
    """p50/p95 of the seconds from a turn's publication to its L0 memory's point in the vector index
    (``indexed_ms`` of the points: memory id → when the embed stage indexed it); None without such points."""
    published = source_times(data_dir, "L0")
    seconds = [max(0.0, (int(at) - published[m]) / 1000) for m, at in indexed_ms.items()
               if m in published and isinstance(at, int | float)]
    return figures(seconds) if seconds else None


def collect_stats(data_dir: Path, prefix: str = "altm.") -> dict[str, Any]:
    if not default_log_path(data_dir).exists() and (data_dir / KAFKA_RECORD).exists():
        counts: dict[str, int] = {}  # a Kafka worker's data dir: its topics are on the broker
        partitions = len(shard_files(data_dir))
        dlq: int | None = None
    else:
        partitions, counts = partitions_of(data_dir, prefix)
        dlq = counts.get(f"{prefix}dlq", 0)
    c = shard_counts(data_dir)
    return {
        "memories": c["memories"],
        "layers": c["layers"],
        "kinds": c["kinds"],
        "graph": {"nodes": c["nodes"], "edges": c["edges"]},
        "dlq": dlq,
        "rejected": c["rejected"],
        "audit_rows": c["audit"],
        "trust": c["trust"],
        "verified_fraction": round(c["verified"] / c["derived"], 4) if c["derived"] else None,
        "partitions": partitions,
        "topics": {k.removeprefix(prefix): v for k, v in sorted(counts.items())},
        "freshness": freshness(data_dir),
    }


def state_hash(data_dir: Path, vector_ids: Sequence[str] | None = None) -> str:
    """SHA-256 of the derived state, independent of partition count, runtime and wall-clock time: every
    derived table (see ``altm.store.HASHED_TABLES``) and, when given, the vector index's id set."""
    digest = hashlib.sha256()
    for table, rows in state_rows(data_dir).items():
        digest.update(table.encode())
        for row in rows:
            digest.update(orjson.dumps(row))
    if vector_ids is not None:
        digest.update(b"vectors")
        for memory_id in sorted(vector_ids):
            digest.update(memory_id.encode())
    return digest.hexdigest()
