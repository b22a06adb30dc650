"""Request bodies of the HTTP API (validated by pydantic; a bad field answers 422 with the reason)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from altm.app import MAX_QUERY_CHARS, Feedback
from altm.core import Scope
from altm.core.bounds import MAX_NAMED_IDS
from altm.recall import DEFAULT_PRESET, MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET, PRESETS


class _Body(BaseModel):
    """A request body: an unknown field answers 422 (a misspelt option was silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class _Scoped(_Body):
    scope: str = Field(description="TENANT/WORKSPACE/USER/AGENT", examples=["acme/platform/dana/coder"])

    @field_validator("scope")
    @classmethod
    def _valid_scope(cls, value: str) -> str:
        Scope.parse(value)  # raises ValueError with the reason → 422
        return value

    @property
    def parsed(self) -> Scope:
        return Scope.parse(self.scope)


class PrepareRequest(_Scoped):
    session_id: str = Field(min_length=1, max_length=128)
    turn_id: str = Field(min_length=1, max_length=256)
    content: str = Field(min_length=1)
    token_budget: int = Field(default=2000, ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET)
    strict_session: bool = False
    preset: str = DEFAULT_PRESET
    idempotency_key: str | None = Field(default=None, max_length=256)

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"unknown preset {value!r}; choose one of {sorted(PRESETS)}")
        return value


class CommitRequest(_Body):
    cycle_id: str
    assistant_content: str
    cited_memory_ids: list[str] = Field(default_factory=list, max_length=MAX_NAMED_IDS)
    feedback: Feedback | None = None


class AbortRequest(_Body):
    cycle_id: str
    reason: str = Field(min_length=1, max_length=2000)


class DrilldownRequest(_Scoped):
    marker: str = Field(max_length=512)
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)


class FeedbackRequest(_Scoped):
    memory_ids: list[str] = Field(min_length=1, max_length=MAX_NAMED_IDS)
    signal: str = Field(pattern="^(helpful|harmful|pin|unpin)$")
    note: str | None = None


class EraseRequest(_Scoped):
    target: str = Field(pattern="^(memory|session|agent|user)$")
    memory_id: str | None = None
    session_id: str | None = None
    reason: str = Field(default="erasure requested", max_length=2000)


class ReviewRequest(_Scoped):
    item_id: str
    decision: str = Field(pattern="^(approve|reject)$")
    note: str | None = Field(default=None, max_length=2000)


class QueryRequest(_Scoped):
    session_id: str | None = None
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    preset: str = DEFAULT_PRESET
    top_k: int = Field(default=10, ge=1, le=200)
    strict_session: bool = False
