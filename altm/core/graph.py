"""Memory graph nodes and typed, weighted edges with confidence and evidence."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from altm.core.memory import Method
from altm.core.scope import Scope


class NodeType(StrEnum):
    ENTITY = "Entity"
    EVENT = "Event"
    TASK = "Task"
    INTENT = "Intent"
    TIME = "Time"


class EdgeType(StrEnum):
    MENTIONS = "MENTIONS"  # memory -> node
    CO_OCCURS = "CO_OCCURS"  # node <-> node, within one memory
    SUPERSEDES = "SUPERSEDES"  # new memory -> old memory
    DUPLICATE_OF = "DUPLICATE_OF"  # duplicate memory -> canonical memory
    CONTRADICTS = "CONTRADICTS"  # memory -> memory
    RELATED = "RELATED"  # model-extracted relation (label in attributes)


class GraphNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str = Field(min_length=1, max_length=64)
    scope: Scope
    node_type: NodeType
    name: str = Field(min_length=1, max_length=512)
    attributes: dict[str, Any] = Field(default_factory=dict)
    method: Method


class GraphEdge(BaseModel):
    """An edge between graph nodes and/or memories. The writer unions evidence across proposals and
    sets ``weight = unit_weight * len(evidence)`` so the result does not depend on arrival order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    edge_id: str = Field(min_length=1, max_length=64)
    scope: Scope
    src_id: str
    dst_id: str
    edge_type: EdgeType
    unit_weight: float = Field(default=1.0, gt=0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    evidence: tuple[str, ...] = Field(min_length=1)
    method: Method
    label: str | None = None


class MemoryLinks(BaseModel):
    """What one memory adds to the graph: the nodes it mentions and the edges between it and them (and among
    them), applied by the writer as one proposal (one transaction step, one change) instead of one per row."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str = Field(min_length=1, max_length=64)
    scope: Scope
    nodes: tuple[GraphNode, ...] = Field(default=(), max_length=512)
    edges: tuple[GraphEdge, ...] = Field(default=(), max_length=1024)
