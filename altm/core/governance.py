"""Payloads of trust and governance proposals: verdicts, supersession, merge, deferred actions."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
    model_validator,
)

from altm.core.ids import derive_id
from altm.core.memory import Trust
from altm.core.scope import ScopeId


class TrustVerdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    trust: Trust


class Supersession(BaseModel):
    """``new_id`` replaces ``old_id``: the old row stays, its validity closes, ``superseded_by`` links it. With
    ``release``, the other way: ``old_id`` is no longer superseded by ``new_id`` (a version placed after it when
    it was decided, before it since an earlier saying of it arrived)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    old_id: str
    new_id: str
    reason: str
    release: bool = Field(default=False, description="Undo this supersession (old_id current again), not make it")

    @model_serializer(mode="wrap")
    def _without_default_release(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A supersession is written as before ``release`` existed (the same bytes, so the same proposal ids)."""
        data = handler(self)
        if isinstance(data, dict) and not self.release:
            data.pop("release", None)
        return data


class Merge(BaseModel):
    """An exact duplicate folds into its canonical memory (evidence is unioned; the duplicate is kept)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    canonical_id: str
    duplicate_id: str
    reason: str


class HeldAction(BaseModel):
    """A destructive or low-confidence action that was not taken, held for review (a review decision carries it
    out or dismisses it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_id: str
    action: str = Field(description="supersede, merge, delete...")
    target_ids: tuple[str, ...]
    reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)


class Erasure(BaseModel):
    """Erase a memory, a session, an agent or a whole user scope (the proposal's scope says whose)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: Literal["memory", "session", "agent", "user"]
    memory_id: str | None = None
    session_id: str | None = None
    reason: str = Field(default="erasure requested", max_length=2000)

    @model_validator(mode="after")
    def _needs_ids(self) -> Erasure:
        if self.target == "memory" and not self.memory_id:
            raise ValueError("erasing a memory needs its memory_id")
        if self.target == "session" and not self.session_id:
            raise ValueError("erasing a session needs its session_id")
        return self

    @property
    def tombstone_reason(self) -> str:
        """The reason its tombstones give: what was erased, then why."""
        return erased_reason(self.target, self.reason)


def erased_reason(target: str, why: str) -> str:
    """How an erasure's tombstone reason reads (see :data:`ERASED_BY_ID_PREFIX`)."""
    return f"{target} erased: {why}"


ShingleHash = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{24}$")]
TermHash = Annotated[str, StringConstraints(pattern=r"^[stnw]:[0-9a-f]{24}$")]
"""The write guard's keyed hashes, as a tombstone keeps them (hex: no text can hide in them)."""


def tombstone_id(tenant_id: str, workspace_id: str, user_id: str, memory_id: str) -> str:
    """The id of the tombstone of a memory of a user (one per memory: what erased or forgot it is its reason)."""
    return derive_id("tomb", tenant_id, workspace_id, user_id, memory_id)


class BuriedContent(BaseModel):
    """One tombstone as the write guard matches it: ids and keyed hashes (HMAC under the user's guard key),
    never the text. A tombstone too large for one record comes in parts: the same ids, each with some of its
    hashes (the writer takes the union)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tombstone_id: str = Field(min_length=1, max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    memory_id: str = Field(min_length=1, max_length=128)
    layer: str | None = Field(default=None, max_length=8)
    value_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    shingle_hashes: tuple[ShingleHash, ...] = ()
    term_hashes: tuple[TermHash, ...] = ()
    distinctive: bool
    reason: str
    at: str = Field(min_length=1, max_length=64)
    erasure_id: str | None = Field(default=None, max_length=128)  # the erase proposal that made it (None: a forget)
    forgotten_by: str | None = Field(default=None, max_length=128)  # the retention pass's control event (a forget)
    forgotten_reason: str | None = None  # the forget's reason, kept when an erasure takes the tombstone over


class Burial(BaseModel):
    """Tombstones an erasure or a forget left in a shard, carried on the proposals log: a shard restored from
    the log on another worker meets the erased content's records shredded (their keys are destroyed) and would
    have no tombstone otherwise. ``guard_key_id`` names (without revealing) the guard key that hashed them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    guard_key_id: str = Field(pattern=r"^[0-9a-f]{16,64}$")
    tombstones: tuple[BuriedContent, ...] = Field(min_length=1)


def rejection_item(rejection_id: int, proposal_id: str | None) -> str:
    """How the review queue names a rejected proposal: by the proposal (``rej_`` and the hex of its id), the
    same wherever the log is replayed or restored; a rejection with no proposal id (bytes that were no
    proposal) by its row number (``rej_<n>``), which only this shard knows."""
    if proposal_id is not None and (found := _PROPOSAL_ID.fullmatch(proposal_id)) is not None:
        return f"rej_{found.group(1)}"
    return f"rej_{rejection_id}"


def rejected_proposal(item_id: str) -> str | int:
    """What a review-queue item of :func:`rejection_item` names: the proposal id, or the row number."""
    key = item_id.removeprefix("rej_")
    return f"prop_{key}" if _PROPOSAL_HEX.fullmatch(key) else int(key)


_PROPOSAL_ID = re.compile(r"prop_([0-9a-f]{32})")
_PROPOSAL_HEX = re.compile(r"[0-9a-f]{32}")


class ReviewDecision(BaseModel):
    """A reviewer's decision on a review-queue item: a memory (mem_…), a deferred action (act_…) or a
    rejected proposal (rej_ and its proposal's hex, or rej_<n> for one without a proposal id: at most 18
    digits, a rejection number fits SQLite's 64-bit INTEGER; see :func:`rejection_item`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(pattern=r"^(mem|act|rej)_[0-9a-f]{32}$|^rej_[0-9]{1,18}$")
    decision: Literal["approve", "reject"]
    note: str | None = Field(default=None, max_length=2000)

    @property
    def item_kind(self) -> Literal["memory", "action", "rejection"]:
        prefix = self.item_id.split("_", 1)[0]
        return {"mem": "memory", "act": "action"}.get(prefix, "rejection")  # type: ignore[return-value]


class LifecycleSignal(BaseModel):
    """One use signal for one memory (``signal_id`` makes it idempotent: counted once however often sent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    signal_id: str
    kind: Literal["injected", "cited_by_agent", "helpful", "harmful", "pin", "unpin", "compress"]
    at: datetime
    level: int | None = Field(default=None, ge=0, le=4, description="compress: the compression level C0-C4")
    session_id: ScopeId | None = Field(default=None,
                                       description="the session of the control that sent it (a recall cycle's)")


FORGOTTEN_PREFIX = "forgotten: "
"""How the reason of a forget's tombstone starts (the forget's own reason follows)."""
ERASED_BY_ID_PREFIX = erased_reason("memory", "")
"""How the tombstone reason of a memory erased by its id (not with its session, agent or user) begins."""


class Forget(BaseModel):
    """Forget memories (retention): removed with an audit row, optionally tombstoned; evidence repaired."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ids: tuple[str, ...] = Field(min_length=1)
    reason: str
    tombstone: bool = False
    # the pass it is part of, by what it takes whole: per layer, every memory valid since before that time and
    # not pinned, named in this event or another one of the pass (one event per agent, and per part of an agent's
    # memories): a persona facet restated only by memories the pass takes goes, as the pass in one event has it
    cutoffs: dict[Literal["L0", "L1", "L2", "L3", "L4"], Annotated[str, StringConstraints(max_length=64)]] = Field(
        default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_default_cutoffs(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A forget without cutoffs is written as before they existed (the same bytes, so the same proposal ids:
        a replay of an older log makes the proposals its source made)."""
        data = handler(self)
        if isinstance(data, dict) and not self.cutoffs:
            data.pop("cutoffs", None)
        return data


class Rollback(BaseModel):
    """Restore the rows one autonomous decision changed, from the audit log (its ``decision_id``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    reason: str = Field(default="rolled back by an operator", max_length=2000)
    # the memories the decision's record names, as the request read them: a replay that never meets the
    # decision (it stood on sessions erased later in the log) tells from them that the erasure removes every
    # trace of this rollback in the source, and voids it instead of refusing it
    names: tuple[Annotated[str, StringConstraints(pattern=r"^mem_[0-9a-f]{32}$")], ...] = Field(
        default=(), max_length=10_000)
    # the use signal a promotion or demotion was made on: a replay that never counted it (its sender's records
    # no longer open: erased later in the log, which removes the decision's record and this rollback's in the
    # source) voids the rollback too
    signal_id: str | None = Field(default=None, max_length=128)
