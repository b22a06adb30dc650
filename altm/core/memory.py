"""The memory unit: layers, kinds, evidence, provenance, bitemporal fields, trust and lifecycle."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from altm.core.scope import Scope, ScopeId


class Layer(StrEnum):
    L0 = "L0"  # raw messages (append-only)
    L1 = "L1"  # session capsules
    L2 = "L2"  # typed atoms
    L3 = "L3"  # cross-session scenes
    L4 = "L4"  # persona facets (shared across the user's agents)


class Kind(StrEnum):
    MESSAGE = "message"
    CAPSULE = "capsule"
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    ISSUE = "issue"
    TASK = "task"
    OUTCOME = "outcome"
    HEURISTIC = "heuristic"
    ANTI_PATTERN = "anti_pattern"
    SCENE = "scene"
    FACET = "facet"


class Method(StrEnum):
    """How a memory was made (DESIGN principle 6: honest semantics)."""

    VERBATIM = "verbatim"
    LLM = "llm"
    HEURISTIC = "heuristic"
    EXTRACTIVE = "extractive"
    GROUND_TRUTH = "ground_truth"


class TrustStatus(StrEnum):
    UNVERIFIED = "unverified"
    VERIFIED = "verified"
    UNCERTAIN = "uncertain"
    CONTRADICTED = "contradicted"
    UNVERIFIABLE = "unverifiable"


class TrustMethod(StrEnum):
    GROUND_TRUTH = "ground_truth"
    CROSS_VERIFY = "cross_verify"
    NLI = "nli"
    CONFIDENCE = "confidence"


class LifecycleState(StrEnum):
    ACTIVE = "active"
    PROMOTED = "promoted"
    DEMOTED = "demoted"
    ARCHIVED = "archived"
    MERGED = "merged"
    REJECTED = "rejected"  # a reviewer rejected it: kept for the audit, out of recall
    FORGOTTEN = "forgotten"


class Provenance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    processor: str = Field(min_length=1, max_length=64)
    model: str | None = None
    prompt_hash: str | None = None
    source_event_id: str | None = None


class Trust(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: TrustStatus = TrustStatus.UNVERIFIED
    method: TrustMethod | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: str | None = None
    contradicting_id: str | None = None
    verified_at: datetime | None = None


class Lifecycle(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: LifecycleState = LifecycleState.ACTIVE
    weight: float = 1.0
    injected_count: int = Field(default=0, ge=0)
    cited_count: int = Field(default=0, ge=0)
    helpful_count: int = Field(default=0, ge=0)
    harmful_count: int = Field(default=0, ge=0)
    pinned: bool = False
    compression_level: int = Field(default=0, ge=0, le=4)


class MemoryUnit(BaseModel):
    """One memory at any layer. ``memory_id`` is deterministic (see :mod:`altm.core.ids`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str = Field(min_length=1, max_length=64)
    scope: Scope
    session_id: ScopeId | None = None
    layer: Layer
    kind: Kind
    content: str
    context: str | None = Field(
        default=None, description="L0 only: the message this one follows in its session, set by the writer "
        "(indexed with a lower weight so a reply is found by the question it answers)")
    content_hash: str = Field(min_length=64, max_length=64)
    source_id: str | None = Field(default=None, description="Id in the source system, e.g. a turn id")
    role: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    evidence: tuple[str, ...] = Field(default=(), description="Ids of lower-layer memories, down to L0")
    provenance: Provenance
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = Field(default=None, description="Set by the writer (wall clock)")
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    trust: Trust = Field(default_factory=Trust)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
