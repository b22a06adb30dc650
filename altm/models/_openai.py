"""OpenAI-compatible adapters of the model ports: structured chat per task, and embeddings.

Per task: settings, retries with backoff (the ``openai`` client's), a token budget, a request-rate limit,
the response cache, and :class:`~altm.core.Deferred` on failure or invalid output — never an invented
answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from openai import AsyncOpenAI, OpenAI, OpenAIError
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from altm.core import Deferred, Scope
from altm.models._base import ChatModel, EmbeddingModel, Structured, T, prompt_hash
from altm.models._cache import LLMCache
from altm.models._metrics import (
    MODEL_CALL_SECONDS,
    MODEL_CALLS,
    MODEL_COST,
    MODEL_TOKENS,
    observe_embedding,
)
from altm.models._settings import LLMSettings, ModelTask, unconfigured

log = logging.getLogger("altm.models")


@dataclass
class _Endpoint:
    """One task's endpoint: its client (made on first use), spend and rate state."""

    task: ModelTask
    settings: LLMSettings
    client: AsyncOpenAI | None = None
    tokens_used: int = 0
    requests: int = 0
    next_slot: float = 0.0

    def async_client(self) -> AsyncOpenAI:
        if self.client is None:
            s = self.settings
            self.client = AsyncOpenAI(base_url=s.base_url, api_key=s.api_key, timeout=s.timeout_s,
                                      max_retries=s.max_retries)
        return self.client

    def _check_budget(self) -> float:
        """Raise when the token budget is spent; return how long to wait for the next rate slot."""
        budget = self.settings.token_budget
        if budget is not None and self.tokens_used >= budget:
            raise Deferred(f"token budget of task {self.task.value} exhausted ({self.tokens_used}/{budget} tokens)")
        if not self.settings.rate_per_minute:
            return 0.0
        interval = 60.0 / self.settings.rate_per_minute
        now = time.monotonic()
        wait = self.next_slot - now
        self.next_slot = max(now, self.next_slot) + interval
        return max(0.0, wait)

    async def admit(self) -> None:
        wait = self._check_budget()
        if wait > 0:
            await asyncio.sleep(wait)

    def admit_blocking(self) -> None:
        wait = self._check_budget()
        if wait > 0:
            time.sleep(wait)

    def spent(self, usage: Any, *, counted: tuple[int, int] = (0, 0)) -> None:
        """Count a call: the tokens the endpoint reports, or ``counted`` here (prompt, completion) where it
        reports none, zero or fewer (a budget must not rest on the endpoint's word; a negative count is none)."""
        self.requests += 1
        if usage is None and counted == (0, 0):
            return
        reported = (_tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"))
        prompt, completion = reported if any(reported) else counted
        self.tokens_used += max(_tokens(usage, "total_tokens"), prompt + completion)
        task, s = self.task.value, self.settings
        MODEL_TOKENS.labels(task=task, direction="prompt").inc(prompt)
        MODEL_TOKENS.labels(task=task, direction="completion").inc(completion)
        cost = (prompt * s.usd_per_1k_prompt_tokens + completion * s.usd_per_1k_completion_tokens) / 1000
        if cost:
            MODEL_COST.labels(task=task).inc(cost)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None


def _estimated_tokens(text: str) -> int:
    """About four bytes a token: what a call is charged at least when its endpoint reports no usage."""
    return (len(text.encode("utf-8", errors="surrogatepass")) + 3) // 4


def _tokens(usage: Any, field: str) -> int:
    """A token count of an endpoint's usage report, 0 when missing or not a count of at least 0."""
    value = getattr(usage, field, 0) if usage is not None else 0
    return value if isinstance(value, int) and value > 0 else 0


class OpenAIChat(ChatModel):
    """Structured chat per task over OpenAI-compatible endpoints; ``cache_for(scope)`` gives the cache in
    that scope's shard."""

    def __init__(self, cache_for: Callable[[Scope], LLMCache], settings: dict[ModelTask, LLMSettings]) -> None:
        self._cache_for = cache_for
        self._endpoints = {t: _Endpoint(t, settings.get(t) or unconfigured()) for t in ModelTask}

    def serves(self, task: ModelTask) -> bool:
        return task is not ModelTask.EMBEDDING and self._endpoints[task].settings.configured

    def model_name(self, task: ModelTask) -> str | None:
        return self._endpoints[task].settings.model

    def usage(self) -> dict[str, dict[str, int]]:
        return {t.value: {"requests": e.requests, "tokens": e.tokens_used} for t, e in self._endpoints.items()}

    async def aclose(self) -> None:
        for endpoint in self._endpoints.values():
            await endpoint.aclose()

    async def structured(
        self, task: ModelTask, scope: Scope, messages: Sequence[dict[str, str]], schema: type[T], *,
        sources: Sequence[str] | None = None,
    ) -> Structured[T]:
        """A JSON answer validated by ``schema``; cached by (model, prompt hash) in the scope's shard, with the
        memories its prompt held (``sources``)."""
        endpoint = self._endpoints[task]
        if not self.serves(task):
            raise RuntimeError(f"task {task.value} has no model configured (ALTM_{task.value}_LLM_MODEL)")
        model = endpoint.settings.model or ""
        phash = prompt_hash(messages, schema)
        cache = self._cache_for(scope)
        cached = cache.get(model, phash, scope.home)
        if cached is not None:
            try:
                answer = Structured(schema.model_validate_json(cached), model, phash, cached=True)
                MODEL_CALLS.labels(task=task.value, outcome="cached").inc()
                return answer
            except ValidationError:
                log.warning("ignoring a cached %s response that no longer validates", task.value)
        try:
            await endpoint.admit()
        except Deferred:
            MODEL_CALLS.labels(task=task.value, outcome="over_budget").inc()
            raise
        since = cache.erasures(scope.home)  # an erasure of the user while the call runs: its answer is not kept
        s = endpoint.settings
        params: dict[str, Any] = {
            "model": model, "messages": list(messages), "temperature": s.temperature,
            "max_tokens": s.max_output_tokens,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}},
        }
        try:
            with MODEL_CALL_SECONDS.labels(task=task.value).time():
                resp: ChatCompletion = await endpoint.async_client().chat.completions.create(**params)
        except OpenAIError as exc:
            endpoint.spent(None)
            MODEL_CALLS.labels(task=task.value, outcome="failed").inc()
            raise Deferred(f"{task.value} model call failed: {type(exc).__name__}: {exc}") from exc
        text = resp.choices[0].message.content if resp.choices else None
        endpoint.spent(resp.usage, counted=(sum(_estimated_tokens(m.get("content") or "") for m in messages),
                                            _estimated_tokens(text or "")))
        try:
            if not text:
                raise Deferred(f"{task.value} model returned no content")
            try:
                value = schema.model_validate_json(_strip_fences(text))
            except ValidationError as exc:
                raise Deferred(f"{task.value} model output does not match {schema.__name__}: "
                               f"{exc.errors(include_url=False)[0]['msg']}") from None
        except Deferred:
            MODEL_CALLS.labels(task=task.value, outcome="invalid").inc()
            raise
        MODEL_CALLS.labels(task=task.value, outcome="ok").inc()
        cache.put(model, phash, value.model_dump_json(), scope.home, since=since, sources=sources)
        return Structured(value, model, phash, cached=False)


class OpenAIEmbeddings(EmbeddingModel):
    """Embeddings from an OpenAI-compatible endpoint. The same object serves the embed stage (async) and
    recall's query embedding (blocking, on recall's helper thread)."""

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.configured:
            raise ValueError("a remote embedding model needs ALTM_EMBEDDING_LLM_MODEL and ALTM_EMBEDDING_LLM_BASE_URL")
        if not settings.dimensions:
            raise ValueError("a remote embedding model needs ALTM_EMBEDDING_LLM_DIMENSIONS (vectors of different "
                             "sizes never share a collection)")
        self.model_id = settings.model or ""
        self.dim = settings.dimensions
        self._endpoint = _Endpoint(ModelTask.EMBEDDING, settings)
        self._sync: OpenAI | None = None

    def _params(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model_id, "input": list(texts), "dimensions": self.dim}

    def _vectors(self, resp: Any) -> list[list[float]]:
        self._endpoint.spent(resp.usage)
        return [list(d.embedding) for d in sorted(resp.data, key=lambda d: d.index)]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._sync is None:
            s = self._endpoint.settings
            self._sync = OpenAI(base_url=s.base_url, api_key=s.api_key, timeout=s.timeout_s,
                                max_retries=s.max_retries)
        self._endpoint.admit_blocking()
        start = time.perf_counter()
        try:
            vectors = self._vectors(self._sync.embeddings.create(**self._params(texts)))
        except OpenAIError as exc:
            raise Deferred(f"embedding call failed: {type(exc).__name__}: {exc}") from exc
        observe_embedding("openai", len(texts), time.perf_counter() - start)
        return vectors

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        await self._endpoint.admit()
        start = time.perf_counter()
        try:
            resp = await self._endpoint.async_client().embeddings.create(**self._params(texts))
        except OpenAIError as exc:
            raise Deferred(f"embedding call failed: {type(exc).__name__}: {exc}") from exc
        vectors = self._vectors(resp)
        observe_embedding("openai", len(texts), time.perf_counter() - start)
        return vectors

    def usage(self) -> dict[str, int]:
        return {"requests": self._endpoint.requests, "tokens": self._endpoint.tokens_used}

    async def aclose(self) -> None:
        await self._endpoint.aclose()
        if self._sync is not None:
            self._sync.close()
            self._sync = None


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text
        text = text.rsplit("```", 1)[0]
    return text.strip()
