"""Events on the topics: turns, control, proposals, changes and dead letters.

All events share an envelope (``event_type`` discriminator, ``schema_version``, ``event_id``, ``scope``,
``timestamp``, in :mod:`altm.core.envelope`) and form the discriminated union :data:`Event`. Proposals, one
model per op, are in :mod:`altm.core.proposals`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from altm.core.bounds import (
    MAX_DEAD_LETTER_ORIGINAL,
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_METADATA_BYTES,
    MAX_NAMED_IDS,
    MAX_PAYLOAD_BYTES,
    bounded_json,
)
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
    source_id: str | None = Field(
        default=None, max_length=MAX_ID_CHARS, description="Id in the host system; defaults to turn_id"
    )
    cycle_id: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    cited_memory_ids: tuple[Annotated[str, Field(max_length=MAX_ID_CHARS)], ...] = Field(default=(),
                                                                                         max_length=MAX_NAMED_IDS)
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description=f"Free-form JSON: at most {MAX_METADATA_BYTES} bytes, {MAX_DEPTH} levels deep, "
        "integers within ±2^53-1",
    )

    @field_validator("metadata")
    @classmethod
    def _bounded_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return bounded_json(value, "metadata", MAX_METADATA_BYTES)

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
    target_ids: tuple[Annotated[str, Field(max_length=MAX_ID_CHARS)], ...] = Field(default=(), max_length=10_000)
    session_id: ScopeId | None = None
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_validator("payload")
    @classmethod
    def _bounded_payload(cls, value: dict[str, Any]) -> dict[str, Any]:
        return bounded_json(value, "payload", MAX_PAYLOAD_BYTES)


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
    mentioned_ids: tuple[str, ...] = Field(
        default=(), description="Graph nodes a committed link_memory change added a MENTIONS edge to, or "
        "strengthened one to, or that the atom a review judged mentions (their scenes are recomputed)")
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None


@dataclass(frozen=True)
class ChangeMarker:
    """What a change is, in a few bytes the writer puts in a header beside the (maybe sealed) value: status,
    op, layer of the memory it carries, and whether it removed memories. A stage that has no use for a change
    with this marker skips it without opening or decoding it (``Processor.accepts``)."""

    status: ChangeStatus
    op: ProposalOp | None = None
    layer: Layer | None = None
    removes: bool = False

    @classmethod
    def of(cls, change: ChangeEvent) -> ChangeMarker:
        return cls(change.status, change.op, change.layer, bool(change.removed_ids))

    def encode(self) -> bytes:
        return "|".join((self.status.value, self.op.value if self.op else "", self.layer.value if self.layer else "",
                         "removes" if self.removes else "")).encode("ascii")

    @classmethod
    def parse(cls, raw: bytes) -> ChangeMarker | None:
        """The marker, or None for bytes that are not one (the reader then decodes the change itself)."""
        return _parse_marker(raw)


@lru_cache(maxsize=256)
def _parse_marker(raw: bytes) -> ChangeMarker | None:
    """A few dozen markers exist (status × op × layer): each is parsed once."""
    try:
        status, op, layer, removes = raw.decode("ascii").split("|")
        return ChangeMarker(ChangeStatus(status), ProposalOp(op) if op else None, Layer(layer) if layer else None,
                            removes == "removes")
    except ValueError:  # also UnicodeDecodeError and an unknown status, op or layer
        return None


def original_text(data: bytes) -> str:
    """Bytes kept for a dead letter or a rejection: UTF-8, with backslash escapes for anything else."""
    return data.decode("utf-8", errors="backslashreplace")


class DeadLetter(BaseModel):
    """An input that could not be decoded, validated or processed, kept with its original bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_type: Literal["dead_letter"] = "dead_letter"
    schema_version: Literal[1] = SCHEMA_VERSION
    stage: str
    error: str
    original: str = Field(description="The original bytes, decoded as UTF-8 with backslash escapes (the first "
                          f"{MAX_DEAD_LETTER_ORIGINAL} bytes of a larger one)")
    original_bytes: int | None = Field(default=None, description="Size of an original kept only in part")
    original_sha256: str | None = Field(default=None, description="Hash of an original kept only in part")
    source_topic: str | None = None
    source_partition: int | None = None
    source_offset: int | None = None
    line: int | None = Field(default=None, description="1-based line number for file input")
    timestamp: datetime

    @classmethod
    def of(cls, original: bytes, *, stage: str, error: str, timestamp: datetime, source_topic: str | None = None,
           source_partition: int | None = None, source_offset: int | None = None,
           line: int | None = None) -> DeadLetter:
        """A dead letter keeping ``original`` whole, or its first bytes with the size and hash of the whole."""
        kept, size, digest = original, None, None
        if len(original) > MAX_DEAD_LETTER_ORIGINAL:
            kept, size = original[:MAX_DEAD_LETTER_ORIGINAL], len(original)
            digest = hashlib.sha256(original).hexdigest()
        return cls(stage=stage, error=error, original=original_text(kept), original_bytes=size,
                   original_sha256=digest, source_topic=source_topic, source_partition=source_partition,
                   source_offset=source_offset, line=line, timestamp=timestamp)


Event = Annotated[
    TurnEvent | ControlEvent | ProposalEvent | ChangeEvent,
    Field(discriminator="event_type"),
]
"""Every event that travels on a topic (dead letters travel on ``dlq`` as :class:`DeadLetter`)."""


def _scope_path(raw: Any) -> str:
    if isinstance(raw, dict):
        return "/".join(str(raw.get(k)) for k in ("tenant_id", "workspace_id", "user_id", "agent_id"))
    return str(raw)
