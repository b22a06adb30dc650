"""The embedded Qdrant engine (qdrant-edge-py): the default vector index, one directory per collection."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as q

from altm.vectors._base import (
    KEYWORD_FIELDS,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorIndexError,
    VectorPoint,
    point_uuid,
)


def edge_filter(flt: VectorFilter) -> q.Filter | None:
    must: list[Any] = [q.FieldCondition(k, match=q.MatchValue(v)) for k, v in sorted(flt.equals.items())]
    must += [q.FieldCondition(k, match=q.MatchAny(list(v))) for k, v in sorted(flt.any_of.items())]
    return q.Filter(must=must) if must else None


class EdgeVectorIndex(VectorIndex):
    def __init__(self, root: str | Path, collection: str, dim: int) -> None:
        self.path = Path(root) / collection
        self.collection = collection
        self.dim = dim
        self._shard: q.EdgeShard | None = None

    def open(self) -> None:
        if self._shard is not None:
            return
        vectors = q.EdgeVectorParams(size=self.dim, distance=q.Distance.Cosine)
        if (self.path / "edge_config.json").exists():
            # unspecified settings (the write-ahead log among them) stay as the shard was created
            self._shard = q.EdgeShard.load(str(self.path), q.EdgeConfig(vectors=vectors))
        else:
            # No write-ahead log: Qdrant keeps the whole WAL mapped and its buffers resident (~600 MB at 100k
            # points). The index is derived state: the embed stage flushes it before committing its offsets,
            # so a crash loses nothing that is not re-embedded from the changes topic.
            self._shard = q.EdgeShard.create(str(self.path), q.EdgeConfig(vectors=vectors, wal_enabled=False))
            for name in KEYWORD_FIELDS:
                self._shard.update(q.UpdateOperation.create_field_index(name, q.PayloadSchemaType.Keyword))

    def optimize(self) -> None:
        """Run Qdrant's optimizers in-process: builds the HNSW index of large segments (blocking)."""
        self.shard.optimize()

    def flush(self) -> None:
        self.shard.flush()

    def close(self) -> None:
        if self._shard is not None:
            self._shard.flush()
            self._shard.close()
            self._shard = None

    @property
    def shard(self) -> q.EdgeShard:
        if self._shard is None:
            raise VectorIndexError(f"vector index {self.path} is not open")
        return self._shard

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        self._check_dims(points)
        self.shard.update(q.UpdateOperation.upsert_points([
            q.Point(point_uuid(p.memory_id), list(p.vector), {**p.payload, "memory_id": p.memory_id})
            for p in points
        ]))

    def delete(self, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            self.shard.update(q.UpdateOperation.delete_points([point_uuid(m) for m in memory_ids]))

    def search(self, vector: Sequence[float], flt: VectorFilter, limit: int) -> list[VectorHit]:
        hits = self.shard.query(q.QueryRequest(
            limit=limit, query=q.Query.Nearest(list(vector)), with_payload=True, filter=edge_filter(flt),
        ))
        return [VectorHit(str((h.payload or {})["memory_id"]), float(h.score), dict(h.payload or {}))
                for h in hits]

    def search_any(self, vector: Sequence[float], filters: Sequence[VectorFilter], limit: int) -> list[VectorHit]:
        nested: list[Any] = [f for f in (edge_filter(x) for x in filters) if f is not None]
        if len(nested) != len(filters) or not nested:
            return super().search_any(vector, filters, limit)
        hits = self.shard.query(q.QueryRequest(
            limit=limit, query=q.Query.Nearest(list(vector)), with_payload=True, filter=q.Filter(should=nested),
        ))
        return [VectorHit(str((h.payload or {})["memory_id"]), float(h.score), dict(h.payload or {}))
                for h in hits]

    def ids(self) -> list[str]:
        out: list[str] = []
        offset = None
        while True:
            points, offset = self.shard.scroll(q.ScrollRequest(limit=1000, offset=offset, with_payload=True))
            out += [str((p.payload or {})["memory_id"]) for p in points]
            if offset is None:
                return sorted(out)

    def count(self, flt: VectorFilter | None = None) -> int:
        return int(self.shard.count(q.CountRequest(exact=True, filter=edge_filter(flt) if flt else None)))
