"""Vector index port and adapters: embedded Qdrant (qdrant-edge-py, default) and Qdrant server."""

from altm.vectors._base import (
    KEYWORD_FIELDS,
    SCOPE_FIELDS,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorIndexBusy,
    VectorIndexError,
    VectorPoint,
    point_uuid,
)

__all__ = [
    "KEYWORD_FIELDS",
    "SCOPE_FIELDS",
    "VectorFilter",
    "VectorHit",
    "VectorIndex",
    "VectorIndexBusy",
    "VectorIndexError",
    "VectorPoint",
    "point_uuid",
]
