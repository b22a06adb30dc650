"""Lifecycle rules: how use signals become a weight and a state (documented, configurable).

    weight = (1 + cite_gain·min(cited, cite_cap) + helpful_gain·helpful + inject_gain·min(injected, inject_cap))
             / (1 + harmful_penalty·harmful),  clamped to [min, max]

The weight is a function of the use signals alone. Trust acts at recall through its own factor (a
contradicted memory ×0.6, see the retrieval config): a weight that also counted a contradiction changed only
when a signal came after the verdict, so it depended on the order they arrived in.

A pinned memory never weighs less than 1 and is exempt from demotion, compression and forgetting. Idle
memories move down compression levels (C1 after 30 days without use, C2 after 90, C3 after 180, C4 after
365); a use (citation or helpful feedback) brings them back to C0. The original stays in the row, so a
drilldown on the marker always returns it. The state is
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
    min_weight: float = Field(default=0.05, gt=0)
    max_weight: float = Field(default=3.0, gt=0)
    promote_at: float = Field(default=1.3, gt=0)
    demote_at: float = Field(default=0.7, gt=0)
    # compression: days without use (and since validity) after which a memory moves to C1..C4
    compress_after_days: tuple[float, float, float, float] = (30.0, 90.0, 180.0, 365.0)

    def compression_level(self, idle_days: float, *, pinned: bool) -> int:
        """C0 full, C1 compressed by content type, C2 summary, C3 title, C4 marker only (pinned: C0)."""
        if pinned:
            return 0
        return sum(1 for days in self.compress_after_days if idle_days >= days)

    def weight(self, *, cited: int, helpful: int, harmful: int, injected: int, pinned: bool) -> float:
        w = (1 + self.cite_gain * min(cited, self.cite_cap) + self.helpful_gain * helpful
             + self.inject_gain * min(injected, self.inject_cap)) / (1 + self.harmful_penalty * harmful)
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
