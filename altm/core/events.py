"""Events on the topics: turns, control, proposals, changes and dead letters.

All events share an envelope (``event_type`` discriminator, ``schema_version``, ``event_id``, ``scope``,
``timestamp``, in :mod:`altm.core.envelope`) and form the discriminated union :data:`Event`. Proposals, one
model per op, are in :mod:`altm.core.proposals`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from altm.core.envelope import SCHEMA_VERSION, Envelope
from altm.core.ids import derive_id
from altm.core.memory import Kind, Layer, MemoryUnit
from altm.core.proposals import ProposalEvent, ProposalOp
from altm.core.scope import Scope, ScopeId

TurnId = Annotated[str, Field(min_length=1, max_length=256)]


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TurnEvent(Envelope):
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


class ControlEvent(Envelope):
    """An operator or user decision about memories (pin, feedback, erase, review)."""

    event_type: Literal["control"] = "control"
    action: ControlAction
    target_ids: tuple[str, ...] = ()
    session_id: ScopeId | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class ChangeStatus(StrEnum):
    COMMITTED = "committed"
    REJECTED = "rejected"
    UNCHANGED = "unchanged"
    DEFERRED = "deferred"  # the guard could not be evaluated: kept for retry, never accepted


class ChangeEvent(Envelope):
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
