"""The runtime cycle: one prepare_turn → commit_turn/abort_turn exchange.

Its state travels on the control topic (action ``cycle``) and the writer stores it, so a replay rebuilds
every cycle; the bundle's quoted text is never put on the log."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from altm.core.scope import Scope, ScopeId


class CycleState(StrEnum):
    PREPARED = "prepared"
    COMMITTED = "committed"
    ABORTED = "aborted"


class RuntimeCycle(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle_id: str
    scope: Scope
    session_id: ScopeId
    turn_id: str
    state: CycleState = CycleState.PREPARED
    idempotency_key: str | None = None
    request_hash: str
    bundle_memory_ids: tuple[str, ...] = ()
    token_budget: int = Field(ge=1)
    created_at: datetime
    closed_at: datetime | None = None
    abort_reason: str | None = None
    commit_hash: str | None = Field(default=None, description="Hash of the commit request, for safe retries")
