"""OpenAI-compatible adapters of the model ports: structured chat per task, and embeddings.

Per task: settings, retries with backoff (the ``openai`` client's rules, applied per attempt: see
:mod:`._attempts`), a token budget, a request-rate limit, the response cache, and :class:`~altm.core.Deferred`
on failure or invalid output — never an invented answer. The ``openai`` client does not check a 200 answer's
body (a gateway's HTML page reaches the caller as a ``str``): what comes back is checked here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from openai import OpenAIError
from openai.types.chat import ChatCompletion
from openai.types.chat.chat_completion import Choice
from pydantic import ValidationError

from altm.core import Deferred, Scope
from altm.models._attempts import UNREADABLE
from altm.models._base import ChatModel, EmbeddingModel, Structured, T, prompt_hash
from altm.models._cache import LLMCache
from altm.models._endpoint import Endpoint, estimated_tokens
from altm.models._metrics import (
    MODEL_CALL_SECONDS,
    MODEL_CALLS,
    observe_embedding,
)
from altm.models._settings import LLMSettings, ModelTask, unconfigured

log = logging.getLogger("altm.models")


class OpenAIChat(ChatModel):
    """Structured chat per task over OpenAI-compatible endpoints; ``cache_for(scope)`` gives the cache in
    that scope's shard."""

    def __init__(self, cache_for: Callable[[Scope], LLMCache], settings: dict[ModelTask, LLMSettings]) -> None:
        self._cache_for = cache_for
        self._endpoints = {t: Endpoint(t, settings.get(t) or unconfigured()) for t in ModelTask}

    def serves(self, task: ModelTask) -> bool:
        return task is not ModelTask.EMBEDDING and self._endpoints[task].settings.configured

    def model_name(self, task: ModelTask) -> str | None:
        return self._endpoints[task].settings.model

    def timeout_s(self, task: ModelTask) -> float | None:
        return self._endpoints[task].settings.timeout_s

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
        since = cache.erasures(scope.home)  # an erasure of the user while the call runs: its answer is not kept
        s = endpoint.settings
        params: dict[str, Any] = {
            "model": model, "messages": list(messages), "temperature": s.temperature,
            "max_tokens": s.max_output_tokens,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}},
        }
        prompt_tokens = sum(estimated_tokens(m.get("content") or "") for m in messages)
        resp = await _completion(endpoint, params, prompt_tokens)
        text = _content(resp)
        endpoint.spent(getattr(resp, "usage", None), counted=(prompt_tokens, estimated_tokens(text or "")))
        value = _answer(task, resp, text, schema)
        MODEL_CALLS.labels(task=task.value, outcome="ok").inc()
        cache.put(model, phash, value.model_dump_json(), scope.home, since=since, sources=sources)
        return Structured(value, model, phash, cached=False)


async def _completion(endpoint: Endpoint, params: dict[str, Any], prompt_tokens: int) -> object:
    """The endpoint's answer to ``params``, as the client read it (not checked), tried again as
    :mod:`._attempts` says (:meth:`Endpoint.attempted`), each outcome counted. Raises :class:`Deferred` when every
    attempt failed, or when the answer could not be read at all (a body cut off: counted ``invalid``, not tried
    again). An error before a request is sent (a key the HTTP headers cannot hold) is not the endpoint's: it is
    raised as it is."""
    task = endpoint.task.value

    async def send() -> Any:
        with MODEL_CALL_SECONDS.labels(task=task).time():
            return await endpoint.async_client().chat.completions.with_raw_response.create(**params)

    try:
        raw = await endpoint.attempted(send, prompt_tokens)
    except Deferred:
        MODEL_CALLS.labels(task=task, outcome="over_budget").inc()
        raise
    except OpenAIError as exc:
        MODEL_CALLS.labels(task=task, outcome="failed").inc()
        raise Deferred(f"{task} model call failed: {type(exc).__name__}: {exc}") from exc
    except asyncio.CancelledError:  # the caller gave up on it (a deadline)
        MODEL_CALLS.labels(task=task, outcome="cancelled").inc()
        raise
    return _parsed(endpoint, raw.parse, prompt_tokens)


def _parsed(endpoint: Endpoint, parse: Callable[[], object], prompt_tokens: int) -> object:
    """What the client reads in a 200's body (``parse``); :class:`Deferred`, the prompt charged and the call
    counted ``invalid`` for a chat task, when it cannot read it (JSON cut off; a page where the embeddings'
    parser expects an object)."""
    try:
        return parse()
    except UNREADABLE as exc:
        endpoint.spent(None, counted=(prompt_tokens, 0))
        if endpoint.task is not ModelTask.EMBEDDING:
            MODEL_CALLS.labels(task=endpoint.task.value, outcome="invalid").inc()
        raise Deferred(f"{endpoint.task.value} model endpoint's answer could not be read: {type(exc).__name__}: "
                       f"{exc}") from exc


def _answer(task: ModelTask, resp: object, text: str | None, schema: type[T]) -> T:
    """The answer ``schema`` reads in ``text`` (of ``resp``); :class:`Deferred`, counted ``invalid``, when there
    is none."""
    try:
        if not isinstance(resp, ChatCompletion):
            raise Deferred(f"{task.value} model endpoint answered a {type(resp).__name__}, not a chat completion "
                           "(is its base URL the API's, ending in /v1?)")
        if not text:
            raise Deferred(f"{task.value} model returned no content")
        try:
            return schema.model_validate_json(_strip_fences(text))
        except ValidationError as exc:
            raise Deferred(f"{task.value} model output does not match {schema.__name__}: "
                           f"{exc.errors(include_url=False)[0]['msg']}") from None
    except Deferred:
        MODEL_CALLS.labels(task=task.value, outcome="invalid").inc()
        raise


def _content(resp: object) -> str | None:
    """The text of a chat completion's first choice; None when there is none or it is not text (an answer the
    client did not check: a ``message`` of null, a ``content`` of 42)."""
    choices = getattr(resp, "choices", None) if isinstance(resp, ChatCompletion) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Choice):
        return None
    content = getattr(getattr(choices[0], "message", None), "content", None)
    return content if isinstance(content, str) else None


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
        self._endpoint = Endpoint(ModelTask.EMBEDDING, settings)

    def _params(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model_id, "input": list(texts), "dimensions": self.dim}

    def _vectors(self, raw: Any, texts: Sequence[str], reserve: int, start: float) -> list[list[float]]:
        """One vector of ``dim`` numbers per text, in the texts' order, from the endpoint's answer ``raw``;
        :class:`Deferred` for any other answer (a gateway's page, fewer vectors, another size: an endpoint that
        ignores ``dimensions``)."""
        resp = _parsed(self._endpoint, raw.parse, reserve)
        self._endpoint.spent(getattr(resp, "usage", None), counted=(reserve, 0))
        data = getattr(resp, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            raise Deferred(f"embedding endpoint answered {len(data) if isinstance(data, list) else 'no'} vectors "
                           f"for {len(texts)} texts")
        by_index = {getattr(d, "index", None): getattr(d, "embedding", None) for d in data}
        if set(by_index) != set(range(len(texts))):
            raise Deferred("embedding endpoint's vectors do not name each text once")
        out: list[list[float]] = []
        for i in range(len(texts)):
            vector = by_index[i]
            if (not isinstance(vector, list) or len(vector) != self.dim
                    or not all(isinstance(x, float | int) for x in vector)):
                size = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise Deferred(f"embedding endpoint answered a vector of {size} for {self.model_id}'s {self.dim} "
                               "dimensions")
            out.append([float(x) for x in vector])
        observe_embedding("openai", len(texts), time.perf_counter() - start)
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        start, reserve = time.perf_counter(), sum(map(estimated_tokens, texts))
        client = self._endpoint.sync_client()
        try:
            raw = self._endpoint.attempted_blocking(
                lambda: client.embeddings.with_raw_response.create(**self._params(texts)), reserve)
        except OpenAIError as exc:
            raise Deferred(f"embedding call failed: {type(exc).__name__}: {exc}") from exc
        return self._vectors(raw, texts, reserve, start)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        start, reserve = time.perf_counter(), sum(map(estimated_tokens, texts))
        client = self._endpoint.async_client()
        try:
            raw = await self._endpoint.attempted(
                lambda: client.embeddings.with_raw_response.create(**self._params(texts)), reserve)
        except OpenAIError as exc:
            raise Deferred(f"embedding call failed: {type(exc).__name__}: {exc}") from exc
        return self._vectors(raw, texts, reserve, start)

    def usage(self) -> dict[str, int]:
        return {"requests": self._endpoint.requests, "tokens": self._endpoint.tokens_used}

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text
        text = text.rsplit("```", 1)[0]
    return text.strip()
