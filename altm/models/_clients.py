"""The one client layer for every model call: structured chat and embeddings over OpenAI-compatible APIs.

Per stage: settings, retries with backoff (the ``openai`` client's), a token budget, a request-rate limit,
the response cache, and :class:`~altm.pipeline.processors.Deferred` on failure or invalid output — never an
invented answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from openai import AsyncOpenAI, OpenAIError
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from altm.core import Scope, sha256_hex
from altm.core.errors import Deferred
from altm.models._cache import LLMCache
from altm.models._settings import LLMSettings, Stage, stage_settings, unconfigured

log = logging.getLogger("altm.models")

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    value: T
    model: str
    prompt_hash: str
    cached: bool


@dataclass
class _StageState:
    settings: LLMSettings
    client: AsyncOpenAI | None = None
    tokens_used: int = 0
    requests: int = 0
    next_slot: float = 0.0


def prompt_hash(messages: Sequence[dict[str, str]], schema: type[BaseModel]) -> str:
    return sha256_hex(orjson.dumps(
        {"messages": list(messages), "schema": schema.__name__, "json_schema": schema.model_json_schema()},
        option=orjson.OPT_SORT_KEYS,
    ))


class ModelClients:
    """Model clients for all stages; ``cache_for(scope)`` gives the cache in that scope's shard."""

    def __init__(
        self,
        cache_for: Callable[[Scope], LLMCache],
        settings: dict[Stage, LLMSettings] | None = None,
    ) -> None:
        self._cache_for = cache_for
        resolved = settings if settings is not None else {s: stage_settings(s) for s in Stage}
        self._stages = {s: _StageState(resolved.get(s) or unconfigured()) for s in Stage}

    def configured(self, stage: Stage) -> bool:
        return self._stages[stage].settings.configured

    def model_name(self, stage: Stage) -> str | None:
        return self._stages[stage].settings.model

    def usage(self) -> dict[str, dict[str, int]]:
        return {s.value: {"requests": st.requests, "tokens": st.tokens_used} for s, st in self._stages.items()}

    async def aclose(self) -> None:
        for st in self._stages.values():
            if st.client is not None:
                await st.client.close()
                st.client = None

    def _client(self, st: _StageState) -> AsyncOpenAI:
        if st.client is None:
            st.client = AsyncOpenAI(
                base_url=st.settings.base_url, api_key=st.settings.api_key, timeout=st.settings.timeout_s,
                max_retries=st.settings.max_retries,
            )
        return st.client

    async def _admit(self, stage: Stage, st: _StageState) -> None:
        budget = st.settings.token_budget
        if budget is not None and st.tokens_used >= budget:
            raise Deferred(f"token budget of stage {stage.value} exhausted ({st.tokens_used}/{budget} tokens)")
        if st.settings.rate_per_minute:
            interval = 60.0 / st.settings.rate_per_minute
            now = time.monotonic()
            wait = st.next_slot - now
            st.next_slot = max(now, st.next_slot) + interval
            if wait > 0:
                await asyncio.sleep(wait)

    async def structured(
        self, stage: Stage, scope: Scope, messages: Sequence[dict[str, str]], schema: type[T]
    ) -> Structured[T]:
        """A JSON answer validated by ``schema``; cached by (model, prompt hash) in the scope's shard."""
        st = self._stages[stage]
        if not st.settings.configured:
            raise RuntimeError(f"stage {stage.value} has no model configured (ALTM_{stage.value}_LLM_MODEL)")
        model = st.settings.model or ""
        phash = prompt_hash(messages, schema)
        cache = self._cache_for(scope)
        cached = cache.get(model, phash)
        if cached is not None:
            try:
                return Structured(schema.model_validate_json(cached), model, phash, cached=True)
            except ValidationError:
                log.warning("ignoring a cached %s response that no longer validates", stage.value)
        await self._admit(stage, st)
        try:
            params: dict[str, Any] = {
                "model": model,
                "messages": list(messages),
                "temperature": st.settings.temperature,
                "max_tokens": st.settings.max_output_tokens,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
                },
            }
            resp: ChatCompletion = await self._client(st).chat.completions.create(**params)
        except OpenAIError as exc:
            raise Deferred(f"{stage.value} model call failed: {type(exc).__name__}: {exc}") from exc
        finally:
            st.requests += 1
        if resp.usage is not None:
            st.tokens_used += int(resp.usage.total_tokens or 0)
        text = resp.choices[0].message.content if resp.choices else None
        if not text:
            raise Deferred(f"{stage.value} model returned no content")
        try:
            value = schema.model_validate_json(_strip_fences(text))
        except ValidationError as exc:
            raise Deferred(f"{stage.value} model output does not match {schema.__name__}: "
                           f"{exc.errors(include_url=False)[0]['msg']}") from None
        cache.put(model, phash, value.model_dump_json(), scope.home)
        return Structured(value, model, phash, cached=False)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        st = self._stages[Stage.EMBEDDING]
        if not st.settings.configured:
            raise RuntimeError("no remote embedding model configured (ALTM_EMBEDDING_LLM_MODEL)")
        await self._admit(Stage.EMBEDDING, st)
        kwargs: dict[str, Any] = {}
        if st.settings.dimensions:
            kwargs["dimensions"] = st.settings.dimensions
        try:
            resp = await self._client(st).embeddings.create(
                model=st.settings.model or "", input=list(texts), **kwargs
            )
        except OpenAIError as exc:
            raise Deferred(f"embedding call failed: {type(exc).__name__}: {exc}") from exc
        finally:
            st.requests += 1
        if resp.usage is not None:
            st.tokens_used += int(resp.usage.total_tokens or 0)
        return [list(d.embedding) for d in sorted(resp.data, key=lambda d: d.index)]


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text
        text = text.rsplit("```", 1)[0]
    return text.strip()
