"""Events on the topics: turns, control, proposals, changes and dead letters.

All events share an envelope (``event_type`` discriminator, ``schema_version``, ``event_id``, ``scope``,
``timestamp``) and form the discriminated union :data:`Event`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from altm.core.cycle import RuntimeCycle
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
from altm.core.graph import GraphEdge, GraphNode
from altm.core.ids import derive_id
from altm.core.memory import Kind, Layer, MemoryUnit
from altm.core.scope import Scope, ScopeId

SCHEMA_VERSION: Literal[1] = 1

TurnId = Annotated[str, Field(min_length=1, max_length=256)]


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


def _aware(value: datetime) -> datetime:
    """Naive timestamps are taken as UTC; everything is stored in UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: str = Field(min_length=1, max_length=128)
    scope: Scope
    timestamp: datetime

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _aware(value)

    @property
    def key(self) -> str:
        """The partition key of every topic: the scope home."""
        return self.scope.home


class TurnEvent(_Envelope):
    """One message of a conversation, produced by a host agent (or ``prepare_turn``/``commit_turn``)."""

    event_type: Literal["turn"] = "turn"
    event_id: str = Field(
        default="", max_length=128,
        description="Derived from scope, session, turn id and role when omitted (deterministic)",
    )
    session_id: ScopeId
    turn_id: TurnId
    role: Role
    content: str
    source_id: str | None = Field(default=None, description="Id in the host system; defaults to turn_id")
    cycle_id: str | None = None
    cited_memory_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _default_event_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id"):
            scope = data.get("scope")
            scope_path = scope.path if isinstance(scope, Scope) else _scope_path(scope)
            data = {
                **data,
                "event_id": derive_id(
                    "turn", scope_path, str(data.get("session_id")), str(data.get("turn_id")),
                    str(data.get("role")),
                ),
            }
        return data


class ControlAction(StrEnum):
    PIN = "pin"
    UNPIN = "unpin"
    FEEDBACK = "feedback"
    ERASE = "erase"
    REVIEW_DECISION = "review_decision"
    ROLLBACK = "rollback"
    LIFECYCLE = "lifecycle"  # a retention or compaction decision, kept on the log so replays repeat it
    SWEEP = "sweep"  # verify these memories again (the trust sweep), kept on the log so replays repeat it
    CYCLE = "cycle"  # a runtime cycle's state (prepared, committed, aborted); the writer stores it


class ControlEvent(_Envelope):
    """An operator or user decision about memories (pin, feedback, erase, review)."""

    event_type: Literal["control"] = "control"
    action: ControlAction
    target_ids: tuple[str, ...] = ()
    session_id: ScopeId | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class ProposalOp(StrEnum):
    UPSERT_MEMORY = "upsert_memory"
    UPSERT_NODE = "upsert_node"
    UPSERT_EDGE = "upsert_edge"
    SET_TRUST = "set_trust"
    SUPERSEDE = "supersede"
    MERGE = "merge"
    DEFER_ACTION = "defer_action"
    ERASE = "erase"
    REVIEW = "review"
    SIGNAL = "signal"
    FORGET = "forget"
    ROLLBACK = "rollback"
    RECORD_CYCLE = "record_cycle"


_OP_PAYLOAD = {
    ProposalOp.UPSERT_MEMORY: "memory",
    ProposalOp.UPSERT_NODE: "node",
    ProposalOp.UPSERT_EDGE: "edge",
    ProposalOp.SET_TRUST: "verdict",
    ProposalOp.SUPERSEDE: "supersession",
    ProposalOp.MERGE: "merge",
    ProposalOp.DEFER_ACTION: "deferred",
    ProposalOp.ERASE: "erasure",
    ProposalOp.REVIEW: "review",
    ProposalOp.SIGNAL: "signal",
    ProposalOp.FORGET: "forget",
    ProposalOp.ROLLBACK: "rollback",
    ProposalOp.RECORD_CYCLE: "cycle",
}


class ProposalEvent(_Envelope):
    """A processor's request to change memory state. Only the writer applies proposals.

    Exactly one payload field is set, the one named by ``op``."""

    event_type: Literal["proposal"] = "proposal"
    op: ProposalOp
    processor: str = Field(min_length=1, max_length=64)
    cause_event_id: str | None = None
    memory: MemoryUnit | None = None
    node: GraphNode | None = None
    edge: GraphEdge | None = None
    verdict: TrustVerdict | None = None
    supersession: Supersession | None = None
    merge: Merge | None = None
    deferred: DeferredAction | None = None
    erasure: Erasure | None = None
    review: ReviewDecision | None = None
    signal: LifecycleSignal | None = None
    forget: Forget | None = None
    rollback: Rollback | None = None
    cycle: RuntimeCycle | None = None

    @model_validator(mode="after")
    def _op_payload(self) -> ProposalEvent:
        wanted = _OP_PAYLOAD[self.op]
        present = [name for name in _OP_PAYLOAD.values() if getattr(self, name) is not None]
        if present != [wanted]:
            raise ValueError(f"a {self.op.value} proposal carries exactly one payload, {wanted!r}; got {present}")
        return self

    @property
    def target_id(self) -> str | None:
        """The id of what the proposal changes (memory, node, edge...)."""
        if self.memory is not None:
            return self.memory.memory_id
        if self.node is not None:
            return self.node.node_id
        if self.edge is not None:
            return self.edge.edge_id
        if self.verdict is not None:
            return self.verdict.memory_id
        if self.supersession is not None:
            return self.supersession.old_id
        if self.merge is not None:
            return self.merge.duplicate_id
        if self.deferred is not None:
            return self.deferred.action_id
        if self.erasure is not None:
            return self.erasure.memory_id or self.erasure.session_id or self.scope.path
        if self.review is not None:
            return self.review.item_id
        if self.signal is not None:
            return self.signal.memory_id
        if self.forget is not None:
            return self.forget.memory_ids[0]
        if self.rollback is not None:
            return self.rollback.decision_id
        if self.cycle is not None:
            return self.cycle.cycle_id
        return None


class ChangeStatus(StrEnum):
    COMMITTED = "committed"
    REJECTED = "rejected"
    UNCHANGED = "unchanged"
    DEFERRED = "deferred"  # the guard could not be evaluated: kept for retry, never accepted


class ChangeEvent(_Envelope):
    """The writer's record of what it did with one proposal (committed, rejected or unchanged)."""

    event_type: Literal["change"] = "change"
    proposal_id: str
    op: ProposalOp | None = None
    status: ChangeStatus
    memory_id: str | None = Field(default=None, description="The id of what changed (memory, node, edge...)")
    layer: Layer | None = None
    kind: Kind | None = None
    reason: str | None = None
    memory: MemoryUnit | None = Field(default=None, description="After-image of a committed memory")
    removed_ids: tuple[str, ...] = Field(
        default=(), validation_alias=AliasChoices("removed_ids", "affected_ids"),
        description="Memories this change removed (erase, forget, rollback): their derived copies go too")
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None


class DeadLetter(BaseModel):
    """An input that could not be decoded, validated or processed, kept with its original bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_type: Literal["dead_letter"] = "dead_letter"
    schema_version: Literal[1] = SCHEMA_VERSION
    stage: str
    error: str
    original: str = Field(description="The original bytes, decoded as UTF-8 with backslash escapes")
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None
    line: int | None = Field(default=None, description="1-based line number for file input")
    timestamp: datetime


Event = Annotated[
    TurnEvent | ControlEvent | ProposalEvent | ChangeEvent,
    Field(discriminator="event_type"),
]
"""Every event that travels on a topic (dead letters travel on ``dlq`` as :class:`DeadLetter`)."""


def _scope_path(raw: Any) -> str:
    if isinstance(raw, dict):
        return "/".join(str(raw.get(k)) for k in ("tenant_id", "workspace_id", "user_id", "agent_id"))
    return str(raw)
