"""Payloads of trust and governance proposals: verdicts, supersession, merge, deferred actions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .memory import Trust


class TrustVerdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    trust: Trust


class Supersession(BaseModel):
    """``new_id`` replaces ``old_id``: the old row stays, its validity closes, ``superseded_by`` links it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    old_id: str
    new_id: str
    reason: str


class Merge(BaseModel):
    """An exact duplicate folds into its canonical memory (evidence is unioned; the duplicate is kept)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    canonical_id: str
    duplicate_id: str
    reason: str


class DeferredAction(BaseModel):
    """A destructive or low-confidence action that was not taken, kept for review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_id: str
    action: str = Field(description="supersede, merge, delete...")
    target_ids: tuple[str, ...]
    reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)
