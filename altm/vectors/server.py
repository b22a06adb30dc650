"""The Qdrant server adapter (qdrant-client), for scale-out. ``QdrantClient(":memory:")`` works in tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models

from altm.vectors._base import (
    KEYWORD_FIELDS,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorIndexError,
    VectorPoint,
    point_uuid,
    stored_points,
)


def server_filter(flt: VectorFilter) -> models.Filter | None:
    must: list[Any] = [
        models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in sorted(flt.equals.items())
    ]
    must += [
        models.FieldCondition(key=k, match=models.MatchAny(any=list(v))) for k, v in sorted(flt.any_of.items())
    ]
    return models.Filter(must=must) if must else None


class QdrantServerIndex(VectorIndex):
    def __init__(self, client: QdrantClient, collection: str, dim: int, *, shared: bool = True) -> None:
        self.shared = shared  # a server's collection; not a client's private ``:memory:`` one
        self.client = client
        self.collection = collection
        self.dim = dim
        self._open = False

    @classmethod
    def from_url(cls, url: str, collection: str, dim: int, api_key: str | None = None) -> QdrantServerIndex:
        return cls(QdrantClient(url=url, api_key=api_key), collection, dim)

    def open(self) -> None:
        if self._open:
            return
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
            )
            for name in KEYWORD_FIELDS:
                self.client.create_payload_index(self.collection, name, models.PayloadSchemaType.KEYWORD)
        else:
            info = self.client.get_collection(self.collection)
            params = info.config.params.vectors
            size = getattr(params, "size", None)
            if size is not None and size != self.dim:
                raise VectorIndexError(
                    f"collection {self.collection} holds {size}-dim vectors, not {self.dim}"
                )
        self._open = True

    def close(self) -> None:
        self._open = False

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        self._check_dims(points)
        self.client.upsert(self.collection, [
            models.PointStruct(
                id=point_uuid(p.memory_id), vector=list(p.vector), payload={**p.payload, "memory_id": p.memory_id}
            )
            for p in points
        ])

    def ids(self) -> list[str]:
        return sorted(self.payload_field("memory_id"))

    def points(self, memory_ids: Sequence[str]) -> dict[str, VectorPoint]:
        if not memory_ids:
            return {}
        return stored_points(self.client.retrieve(self.collection, [point_uuid(m) for m in memory_ids],
                                                  with_payload=True, with_vectors=True))

    def payload_field(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        offset: Any = None
        while True:
            points, offset = self.client.scroll(self.collection, limit=1000, offset=offset, with_payload=True)
            for p in points:
                payload = p.payload or {}
                out[str(payload["memory_id"])] = payload.get(name)
            if offset is None:
                return out

    def delete(self, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            self.client.delete(
                self.collection, models.PointIdsList(points=[point_uuid(m) for m in memory_ids])
            )

    def search(self, vector: Sequence[float], flt: VectorFilter, limit: int) -> list[VectorHit]:
        self._check_query(vector)
        res = self.client.query_points(
            self.collection, query=list(vector), query_filter=server_filter(flt), limit=limit, with_payload=True
        )
        return [VectorHit(str((p.payload or {})["memory_id"]), float(p.score), dict(p.payload or {}))
                for p in res.points]

    def count(self, flt: VectorFilter | None = None) -> int:
        return int(self.client.count(self.collection, count_filter=server_filter(flt) if flt else None,
                                     exact=True).count)
