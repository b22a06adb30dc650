"""Per-task model settings: ``ALTM_<TASK>_LLM_*`` inheriting ``ALTM_LLM_*``."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ModelTask(StrEnum):
    """What a model is asked to do; each task has its own endpoint settings (``ALTM_<TASK>_LLM_*``)."""

    L1 = "L1"  # fold: session capsules, and compressing prose in bundles
    L2 = "L2"  # extract: typed atoms
    GRAPH = "GRAPH"  # link
    GOVERNANCE = "GOVERNANCE"  # govern: supersede rubric
    NLI = "NLI"  # verify
    L3 = "L3"  # scenes
    L4 = "L4"  # persona facets
    EMBEDDING = "EMBEDDING"  # remote embeddings


class LLMSettings(BaseSettings):
    """One task's OpenAI-compatible endpoint. A task with no ``model`` is not configured (model-free)."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="ALTM_LLM_")

    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:8000/v1")
    api_key: str = "not-needed"
    model: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, description="Retries with backoff inside one call")
    token_budget: int | None = Field(default=None, ge=0, description="Total tokens this task may spend")
    rate_per_minute: float | None = Field(default=None, gt=0, description="Requests per minute")
    temperature: float = 0.0
    max_output_tokens: int = Field(default=1024, ge=1)
    dimensions: int | None = Field(default=None, description="Embedding size (EMBEDDING task)")
    usd_per_1k_prompt_tokens: float = Field(default=0.0, ge=0, description="Price, for the cost metric")
    usd_per_1k_completion_tokens: float = Field(default=0.0, ge=0, description="Price, for the cost metric")

    @property
    def configured(self) -> bool:
        return bool(self.model and self.base_url)


def unconfigured() -> LLMSettings:
    """Settings of a task that has no model (never reads the environment)."""
    return LLMSettings.model_construct()


def task_settings(task: ModelTask) -> LLMSettings:
    """``ALTM_LLM_*`` overridden field by field by ``ALTM_<TASK>_LLM_*``."""
    base = LLMSettings(_env_prefix="ALTM_LLM_")
    specific = LLMSettings(_env_prefix=f"ALTM_{task.value}_LLM_")
    return base.model_copy(update={k: getattr(specific, k) for k in specific.model_fields_set})


def all_task_settings() -> dict[ModelTask, LLMSettings]:
    """Every task's settings from the environment."""
    return {task: task_settings(task) for task in ModelTask}
