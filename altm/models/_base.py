"""The model ports: structured chat and embeddings. Adapters: OpenAI-compatible endpoints, the local MiniLM
embedder (and the optional local E5), and no model at all. Processors and recall see only these interfaces."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import orjson
from pydantic import BaseModel

from altm.core import Scope, sha256_hex
from altm.models._settings import ModelTask

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    value: T
    model: str
    prompt_hash: str
    cached: bool


def prompt_hash(messages: Sequence[dict[str, str]], schema: type[BaseModel]) -> str:
    return sha256_hex(orjson.dumps(
        {"messages": list(messages), "schema": schema.__name__, "json_schema": schema.model_json_schema()},
        option=orjson.OPT_SORT_KEYS,
    ))


class ChatModel(ABC):
    """Structured chat, per task. ``serves(task)`` says whether a model answers that task at all: wiring
    gives each processor its model method or its rules from it, once."""

    @abstractmethod
    def serves(self, task: ModelTask) -> bool: ...

    @abstractmethod
    def model_name(self, task: ModelTask) -> str | None: ...

    @abstractmethod
    async def structured(
        self, task: ModelTask, scope: Scope, messages: Sequence[dict[str, str]], schema: type[T], *,
        sources: Sequence[str] | None = None,
    ) -> Structured[T]:
        """A JSON answer validated by ``schema``; raises :class:`~altm.core.Deferred` on failure. ``sources``:
        the memories whose content the messages hold (an erasure of one removes the cached answer; None: not
        known, any erasure of the user's does)."""

    def timeout_s(self, task: ModelTask) -> float | None:
        """How long one request of ``task`` may take (None: no bound is known)."""
        return None

    def usage(self) -> dict[str, dict[str, int]]:
        return {}

    async def aclose(self) -> None:
        return None


class NoChat(ChatModel):
    """No model configured: every processor uses its deterministic method, labelled as such."""

    def serves(self, task: ModelTask) -> bool:
        return False

    def model_name(self, task: ModelTask) -> str | None:
        return None

    async def structured(
        self, task: ModelTask, scope: Scope, messages: Sequence[dict[str, str]], schema: type[T], *,
        sources: Sequence[str] | None = None,
    ) -> Structured[T]:
        raise RuntimeError(f"no model serves task {task.value} (ALTM_{task.value}_LLM_MODEL is not set)")


class EmbeddingModel(ABC):
    """Texts → L2-normalised vectors. Vectors of different ``model_id``/``dim`` are never mixed.

    ``embed`` blocks (recall calls it on a helper thread); ``aembed`` is for the event loop (the embed stage).
    """

    model_id: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]:
        """Recall's query. The same as a memory's text for symmetric models; asymmetric ones (E5) prefix it."""
        (vector,) = self.embed([text])
        return vector

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed, list(texts))

    @property
    def collection(self) -> str:
        """The vector collection for this model: one per model and dimension."""
        slug = "".join(c if c.isalnum() else "_" for c in self.model_id.lower())
        return f"altm_{slug}_{self.dim}"

    async def aclose(self) -> None:
        return None
