"""Event, memory and cycle models (pydantic v2), the orjson codec and the shard's SQL migrations."""

from ._scope import Scope, ScopeId
from .codec import DecodeError, decode_dead_letter, decode_event, describe_validation_error, encode
from .cycle import CycleState, RuntimeCycle
from .events import (
    SCHEMA_VERSION,
    ChangeEvent,
    ChangeStatus,
    ControlAction,
    ControlEvent,
    DeadLetter,
    Event,
    ProposalEvent,
    ProposalOp,
    Role,
    TurnEvent,
)
from .governance import DeferredAction, Erasure, Merge, Supersession, TrustVerdict
from .graph import EdgeType, GraphEdge, GraphNode, NodeType
from .ids import content_hash, derive_id, normalise_text, sha256_hex
from .memory import (
    Kind,
    Layer,
    Lifecycle,
    LifecycleState,
    MemoryUnit,
    Method,
    Provenance,
    Trust,
    TrustMethod,
    TrustStatus,
)

__all__ = [
    "SCHEMA_VERSION",
    "ChangeEvent",
    "ChangeStatus",
    "ControlAction",
    "ControlEvent",
    "CycleState",
    "DeadLetter",
    "DecodeError",
    "DeferredAction",
    "EdgeType",
    "Erasure",
    "GraphEdge",
    "GraphNode",
    "Merge",
    "NodeType",
    "Supersession",
    "TrustVerdict",
    "Event",
    "Kind",
    "Layer",
    "Lifecycle",
    "LifecycleState",
    "MemoryUnit",
    "Method",
    "ProposalEvent",
    "ProposalOp",
    "Provenance",
    "Role",
    "RuntimeCycle",
    "Scope",
    "ScopeId",
    "Trust",
    "TrustMethod",
    "TrustStatus",
    "TurnEvent",
    "content_hash",
    "decode_dead_letter",
    "decode_event",
    "derive_id",
    "describe_validation_error",
    "encode",
    "normalise_text",
    "sha256_hex",
]
