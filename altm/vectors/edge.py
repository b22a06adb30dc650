"""The embedded Qdrant engine (qdrant-edge-py): the default vector index, one directory per collection."""

from __future__ import annotations

import fcntl
import math
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import orjson
import qdrant_edge as q

from altm.vectors._base import (
    KEYWORD_FIELDS,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorIndexBusy,
    VectorIndexError,
    VectorPoint,
    point_uuid,
    stored_points,
)

_VACUUM = q.EdgeOptimizersConfig(deleted_threshold=0.0, vacuum_min_vector_number=1)
"""``optimize`` rewrites every segment that holds deleted points (an erased memory's vector leaves the files)."""


def edge_filter(flt: VectorFilter) -> q.Filter | None:
    must: list[Any] = [q.FieldCondition(k, match=q.MatchValue(v)) for k, v in sorted(flt.equals.items())]
    must += [q.FieldCondition(k, match=q.MatchAny(list(v))) for k, v in sorted(flt.any_of.items())]
    return q.Filter(must=must) if must else None


class EdgeVectorIndex(VectorIndex):
    """One embedded Qdrant shard per collection, held by one handle at a time.

    Qdrant's embedded engine does not share a directory: a second handle that merely loads it breaks the
    first one's next flush (measured: "tracker journal is shorter than expected"). An exclusive ``flock`` on
    ``<collection>.lock`` guards the directory for as long as a handle is open; another opener gets
    :class:`VectorIndexBusy`. ``read_only`` handles (state hashes, read-only commands on a quiet data dir)
    never write or flush."""

    def __init__(self, root: str | Path, collection: str, dim: int, *, read_only: bool = False) -> None:
        self.path = Path(root) / collection
        self.collection = collection
        self.dim = dim
        self.read_only = read_only
        self._engine: q.EdgeShard | None = None
        self._lock: IO[bytes] | None = None

    def _acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock").open("wb")
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise VectorIndexBusy(f"the vector index {self.path} is open in another process (or handle): the "
                                  "embedded index serves one at a time") from None
        self._lock = lock

    def _release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def open(self) -> None:
        if self._engine is not None:
            return
        if self.read_only and not (self.path / "edge_config.json").exists():
            raise VectorIndexError(f"no vector index at {self.path}")
        self._acquire()
        try:
            self._load()
        except BaseException:
            self._release()
            raise

    def _stored_datatype(self) -> q.VectorStorageDatatype:
        """The storage type the index was created with (float32 before float16 became the default)."""
        try:
            config = orjson.loads((self.path / "edge_config.json").read_bytes())
            stored = str(config["vectors"][""].get("datatype", "float32"))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return q.VectorStorageDatatype.Float32
        return q.VectorStorageDatatype.Float16 if stored == "float16" else q.VectorStorageDatatype.Float32

    def _load(self) -> None:
        if (self.path / "edge_config.json").exists():
            # unspecified settings (the write-ahead log among them) stay as the shard was created
            vectors = q.EdgeVectorParams(size=self.dim, distance=q.Distance.Cosine, datatype=self._stored_datatype())
            self._engine = q.EdgeShard.load(str(self.path), q.EdgeConfig(vectors=vectors, optimizers=_VACUUM))
        else:
            # float16 storage: half the memory-mapped pages of float32 (at 150k points the resident set is ~110 MB
            # smaller); cosine scores of unit vectors move by ~1e-3, below what separates ranks in recall
            vectors = q.EdgeVectorParams(size=self.dim, distance=q.Distance.Cosine,
                                         datatype=q.VectorStorageDatatype.Float16)
            # No write-ahead log: Qdrant keeps the whole WAL mapped and its buffers resident (~600 MB at 100k
            # points). The index is derived state: the embed stage flushes it before committing its offsets,
            # so a crash loses nothing that is not re-embedded from the changes topic.
            self._engine = q.EdgeShard.create(str(self.path), q.EdgeConfig(vectors=vectors, wal_enabled=False,
                                                                           optimizers=_VACUUM))
            for name in KEYWORD_FIELDS:
                self._engine.update(q.UpdateOperation.create_field_index(name, q.PayloadSchemaType.Keyword))

    def optimize(self) -> None:
        """Run Qdrant's optimizers in-process: builds the HNSW index of large segments (blocking)."""
        self._writable().optimize()

    def flush(self) -> None:
        if not self.read_only:
            self.engine.flush()

    def close(self) -> None:
        if self._engine is not None:
            if not self.read_only:
                self._engine.flush()
            self._engine.close()
            self._engine = None
        self._release()

    def _writable(self) -> q.EdgeShard:
        if self.read_only:
            raise VectorIndexError(f"vector index {self.path} is open read-only")
        return self.engine

    @property
    def engine(self) -> q.EdgeShard:
        """The embedded Qdrant engine ("edge shard" in Qdrant's words; a *shard* in ALTM is the SQLite store
        of one partition)."""
        if self._engine is None:
            raise VectorIndexError(f"vector index {self.path} is not open")
        return self._engine

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        self._check_dims(points)
        self._writable().update(q.UpdateOperation.upsert_points([
            q.Point(point_uuid(p.memory_id), list(p.vector), {**p.payload, "memory_id": p.memory_id})
            for p in points
        ]))

    def delete(self, memory_ids: Sequence[str]) -> None:
        """Remove the points of ``memory_ids``. Qdrant only marks a point deleted, its vector stays in the segment's
        files: each point is first overwritten in place with a constant vector and no payload (an erased memory's
        embedding, which confirms a guessed sentence, stayed in the data dir's files), then deleted; a segment
        made immutable by an optimisation keeps the old bytes until the next ``optimize`` vacuums it."""
        if not memory_ids:
            return
        held = list(self.points(memory_ids))
        if held:
            blank = [1.0 / math.sqrt(self.dim)] * self.dim
            self._writable().update(q.UpdateOperation.upsert_points(
                [q.Point(point_uuid(m), blank, {"memory_id": m}) for m in held]))
        self._writable().update(q.UpdateOperation.delete_points([point_uuid(m) for m in memory_ids]))

    def search(self, vector: Sequence[float], flt: VectorFilter, limit: int) -> list[VectorHit]:
        self._check_query(vector)
        hits = self.engine.query(q.QueryRequest(
            limit=limit, query=q.Query.Nearest(list(vector)), with_payload=True, filter=edge_filter(flt),
        ))
        return [VectorHit(str((h.payload or {})["memory_id"]), float(h.score), dict(h.payload or {}))
                for h in hits]

    def search_any(self, vector: Sequence[float], filters: Sequence[VectorFilter], limit: int) -> list[VectorHit]:
        self._check_query(vector)
        nested: list[Any] = [f for f in (edge_filter(x) for x in filters) if f is not None]
        if len(nested) != len(filters) or not nested:
            return super().search_any(vector, filters, limit)
        hits = self.engine.query(q.QueryRequest(
            limit=limit, query=q.Query.Nearest(list(vector)), with_payload=True, filter=q.Filter(should=nested),
        ))
        return [VectorHit(str((h.payload or {})["memory_id"]), float(h.score), dict(h.payload or {}))
                for h in hits]

    def ids(self) -> list[str]:
        return sorted(self.payload_field("memory_id"))

    def points(self, memory_ids: Sequence[str]) -> dict[str, VectorPoint]:
        if not memory_ids:
            return {}
        return stored_points(self.engine.retrieve([point_uuid(m) for m in memory_ids], True, True))

    def payload_field(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        offset = None
        while True:
            points, offset = self.engine.scroll(q.ScrollRequest(limit=1000, offset=offset, with_payload=True))
            for p in points:
                payload = p.payload or {}
                out[str(payload["memory_id"])] = payload.get(name)
            if offset is None:
                return out

    def count(self, flt: VectorFilter | None = None) -> int:
        return int(self.engine.count(q.CountRequest(exact=True, filter=edge_filter(flt) if flt else None)))
