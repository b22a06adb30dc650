"""Lifecycle rules: how use signals become a weight and a state (documented, configurable).

    weight = (1 + cite_gain·min(cited, cite_cap) + helpful_gain·helpful + inject_gain·min(injected, inject_cap))
             / (1 + harmful_penalty·harmful)  × conflict_factor (when contradicted),  clamped to [min, max]

A pinned memory never weighs less than 1 and is exempt from demotion and forgetting. The state is
``promoted`` at weight ≥ promote_at, ``demoted`` at ≤ demote_at, else ``active``. Weights multiply the fused
retrieval score, so use raises a memory's rank and harm lowers it.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LifecycleRules(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ALTM_LIFECYCLE_", extra="ignore")

    cite_gain: float = Field(default=0.15, ge=0)
    cite_cap: int = Field(default=10, ge=0)
    helpful_gain: float = Field(default=0.25, ge=0)
    inject_gain: float = Field(default=0.01, ge=0)
    inject_cap: int = Field(default=20, ge=0)
    harmful_penalty: float = Field(default=0.75, ge=0)
    conflict_factor: float = Field(default=0.8, gt=0, le=1)
    min_weight: float = Field(default=0.05, gt=0)
    max_weight: float = Field(default=3.0, gt=0)
    promote_at: float = Field(default=1.3, gt=0)
    demote_at: float = Field(default=0.7, gt=0)

    def weight(self, *, cited: int, helpful: int, harmful: int, injected: int, pinned: bool,
               contradicted: bool) -> float:
        w = (1 + self.cite_gain * min(cited, self.cite_cap) + self.helpful_gain * helpful
             + self.inject_gain * min(injected, self.inject_cap)) / (1 + self.harmful_penalty * harmful)
        if contradicted:
            w *= self.conflict_factor
        w = min(self.max_weight, max(self.min_weight, w))
        return round(max(w, 1.0) if pinned else w, 6)

    def state(self, weight: float, *, pinned: bool, current: str) -> str:
        if current in ("merged", "rejected", "forgotten"):
            return current
        if weight >= self.promote_at:
            return "promoted"
        if weight <= self.demote_at and not pinned:
            return "demoted"
        return "active"
