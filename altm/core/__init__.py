"""The domain core: scope, ids, events, memory unit, codec, errors, topics, partitioner and settings.

Nothing here imports another part of ALTM; every other layer builds on it."""

from altm.core.codec import (
    DecodeError,
    decode_dead_letter,
    decode_event,
    describe_validation_error,
    encode,
    original_text,
)
from altm.core.cycle import CycleState, RuntimeCycle
from altm.core.errors import Deferred, ProcessingError
from altm.core.events import (
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
from altm.core.governance import (
    DeferredAction,
    Erasure,
    Forget,
    LifecycleSignal,
    Merge,
    ReviewDecision,
    Rollback,
    Supersession,
    TrustVerdict,
)
from altm.core.graph import EdgeType, GraphEdge, GraphNode, NodeType
from altm.core.ids import content_hash, derive_id, normalise_text, sha256_hex
from altm.core.memory import (
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
from altm.core.partitioner import murmur2, partition_for
from altm.core.scope import Scope, ScopeId
from altm.core.settings import Settings
from altm.core.topics import Topic, TopicSpec, all_topic_specs, topic_name

__all__ = [
    "SCHEMA_VERSION",
    "ChangeEvent",
    "ChangeStatus",
    "ControlAction",
    "ControlEvent",
    "CycleState",
    "DeadLetter",
    "DecodeError",
    "Deferred",
    "DeferredAction",
    "EdgeType",
    "Erasure",
    "Event",
    "Forget",
    "GraphEdge",
    "GraphNode",
    "Kind",
    "Layer",
    "Lifecycle",
    "LifecycleSignal",
    "LifecycleState",
    "MemoryUnit",
    "Merge",
    "Method",
    "NodeType",
    "ProcessingError",
    "ProposalEvent",
    "ProposalOp",
    "Provenance",
    "ReviewDecision",
    "Role",
    "Rollback",
    "RuntimeCycle",
    "Scope",
    "ScopeId",
    "Settings",
    "Supersession",
    "Topic",
    "TopicSpec",
    "Trust",
    "TrustMethod",
    "TrustStatus",
    "TrustVerdict",
    "TurnEvent",
    "all_topic_specs",
    "content_hash",
    "decode_dead_letter",
    "decode_event",
    "derive_id",
    "describe_validation_error",
    "encode",
    "murmur2",
    "normalise_text",
    "original_text",
    "partition_for",
    "sha256_hex",
    "topic_name",
]
