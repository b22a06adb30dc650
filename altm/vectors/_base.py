"""The vector index port: points keyed by memory id, scope fields as payload, filtered search.

Adapters: embedded Qdrant (``edge:///PATH``) and a Qdrant server (``http(s)://``), chosen in wiring."""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

SCOPE_FIELDS = ("tenant_id", "workspace_id", "user_id", "agent_id", "session_id")
KEYWORD_FIELDS = (*SCOPE_FIELDS, "layer", "kind", "trust_status")

_NS = uuid.UUID("5b0c8a52-2f0e-4c47-9a43-3a4f0f0c7d11")


def point_uuid(memory_id: str) -> str:
    """Qdrant ids are UUIDs or integers; a memory id maps to a stable UUID (the id itself is in the payload)."""
    return str(uuid.uuid5(_NS, memory_id))


@dataclass(frozen=True)
class VectorPoint:
    memory_id: str
    vector: Sequence[float]
    payload: dict[str, Any]


def stored_points(records: Iterable[Any]) -> dict[str, VectorPoint]:
    """Qdrant's records (embedded or client: a ``payload`` holding ``memory_id``, one unnamed dense ``vector``)
    as points by memory id."""
    out: dict[str, VectorPoint] = {}
    for r in records:
        payload = dict(r.payload or {})
        vector = cast("list[float]", r.vector if isinstance(r.vector, list) else [])
        out[str(payload["memory_id"])] = VectorPoint(str(payload["memory_id"]), list(vector), payload)
    return out


@dataclass(frozen=True)
class VectorFilter:
    """Exact matches (``field -> value``) and any-of matches (``field -> values``), all ANDed."""

    equals: dict[str, str] = field(default_factory=dict)
    any_of: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    memory_id: str
    score: float
    payload: dict[str, Any]


class VectorIndexError(RuntimeError):
    pass


class VectorIndexBusy(VectorIndexError):
    """Another handle has an embedded index open: opening a second one would corrupt it."""


class VectorIndex(ABC):
    """One collection per embedding model and dimension (:attr:`Embedder.collection`)."""

    dim: int
    shared: bool = False  # other processes may write the same collection (a server): a worker deletes no point
    # it did not remove itself (a shard it drops, a point no shard of its own holds may be another worker's)

    def _check_dims(self, points: Sequence[VectorPoint]) -> None:
        for p in points:
            if len(p.vector) != self.dim:
                raise VectorIndexError(f"vector of {len(p.vector)} dims for a {self.dim}-dim collection")

    def _check_query(self, vector: Sequence[float]) -> None:
        """A query of another size is this index's error (recall goes on without its vector channel), not the
        engine's own exception."""
        if len(vector) != self.dim:
            raise VectorIndexError(f"query of {len(vector)} dims for a {self.dim}-dim collection")

    @abstractmethod
    def open(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    @abstractmethod
    def delete(self, memory_ids: Sequence[str]) -> None: ...

    @abstractmethod
    def search(self, vector: Sequence[float], flt: VectorFilter, limit: int) -> list[VectorHit]: ...

    @abstractmethod
    def count(self, flt: VectorFilter | None = None) -> int: ...

    @abstractmethod
    def ids(self) -> list[str]:
        """Every memory id with a point, sorted (state hashes cover the index; tests find orphans)."""

    @abstractmethod
    def points(self, memory_ids: Sequence[str]) -> dict[str, VectorPoint]:
        """The stored points (vector and payload) of those of ``memory_ids`` that have one."""

    @abstractmethod
    def payload_field(self, name: str) -> dict[str, Any]:
        """Memory id → one payload field of its point (None where it has none), for every point."""

    def flush(self) -> None:
        """Make every write so far durable (the embed stage calls it before its offsets are committed)."""
        return None

    def optimize(self) -> None:
        """Build search indexes for what was written since the last call (may take a while)."""
        return None

    def search_any(self, vector: Sequence[float], filters: Sequence[VectorFilter], limit: int) -> list[VectorHit]:
        """Nearest points matching any of ``filters`` (one query where the adapter can nest filters)."""
        best: dict[str, VectorHit] = {}
        for flt in filters:
            for hit in self.search(vector, flt, limit):
                if hit.memory_id not in best or hit.score > best[hit.memory_id].score:
                    best[hit.memory_id] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.memory_id))[:limit]
