from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from altm.core import Deferred, Scope
from altm.models import (
    LLMSettings,
    MemoryLLMCache,
    ModelTask,
    NoChat,
    OpenAIChat,
    OpenAIEmbeddings,
    task_settings,
)
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")


class Answer(BaseModel):
    value: int


def _chat(base_url: str, cache: MemoryLLMCache, **extra: Any) -> OpenAIChat:
    return OpenAIChat(lambda scope: cache, {ModelTask.L2: LLMSettings(base_url=base_url, model="m", **extra)})


def test_task_settings_inherit_the_global_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALTM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ALTM_LLM_MODEL", "general")
    monkeypatch.setenv("ALTM_NLI_LLM_MODEL", "nli-small")
    monkeypatch.setenv("ALTM_NLI_LLM_TOKEN_BUDGET", "1000")
    nli, l2 = task_settings(ModelTask.NLI), task_settings(ModelTask.L2)
    assert nli.model == "nli-small" and nli.base_url == "http://127.0.0.1:9/v1" and nli.token_budget == 1000
    assert l2.model == "general" and l2.token_budget is None and l2.configured


async def test_unconfigured_task_is_model_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_LLM_MODEL", raising=False)
    monkeypatch.delenv("ALTM_L1_LLM_MODEL", raising=False)
    assert not task_settings(ModelTask.L1).configured
    assert not OpenAIChat(lambda scope: MemoryLLMCache(), {}).serves(ModelTask.L1)
    assert not NoChat().serves(ModelTask.L2)
    with pytest.raises(RuntimeError, match="no model serves task L2"):
        await NoChat().structured(ModelTask.L2, SCOPE, [], Answer)


async def test_retries_transient_errors_with_backoff() -> None:
    calls = {"n": 0}

    def answer(body: dict[str, Any]) -> str | int:
        calls["n"] += 1
        return 503 if calls["n"] == 1 else json.dumps({"value": 7})

    with openai_double(answer) as api:
        chat = _chat(api.base_url, MemoryLLMCache(), max_retries=2)
        result = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        await chat.aclose()
    assert result.value.value == 7 and not result.cached
    assert len(api.chat_requests) == 2


async def test_cache_is_keyed_by_model_and_prompt() -> None:
    cache = MemoryLLMCache()
    with openai_double(lambda body: json.dumps({"value": 1})) as api:
        chat = _chat(api.base_url, cache)
        first = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        second = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        other = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "other"}], Answer)
        await chat.aclose()
    assert second.cached and not first.cached and not other.cached
    assert first.prompt_hash == second.prompt_hash != other.prompt_hash
    assert len(api.chat_requests) == 2
    assert chat.usage()["L2"] == {"requests": 2, "tokens": 200}


async def test_fenced_json_is_accepted_and_prose_is_deferred() -> None:
    answers = iter(["```json\n{\"value\": 3}\n```", "The answer is three."])
    with openai_double(lambda body: next(answers)) as api:
        chat = _chat(api.base_url, MemoryLLMCache())
        ok = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "a"}], Answer)
        with pytest.raises(Deferred, match="does not match Answer"):
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "b"}], Answer)
        await chat.aclose()
    assert ok.value.value == 3


async def test_rate_limit_spaces_requests() -> None:
    import time

    with openai_double(lambda body: json.dumps({"value": 1})) as api:
        chat = _chat(api.base_url, MemoryLLMCache(), rate_per_minute=600)  # one per 0.1 s
        start = time.monotonic()
        for i in range(3):
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": str(i)}], Answer)
        elapsed = time.monotonic() - start
        await chat.aclose()
    assert elapsed >= 0.2


async def test_remote_embeddings_serve_the_event_loop_and_a_blocking_caller_alike() -> None:
    with openai_double(lambda body: "") as api:
        model = OpenAIEmbeddings(LLMSettings(base_url=api.base_url, model="emb", dimensions=8))
        vectors = await model.aembed(["a", "b"])
        (blocking,) = model.embed(["a"])  # recall embeds its query on a helper thread
        await model.aclose()
    assert len(vectors) == 2 and len(vectors[0]) == 8 and vectors[0] != vectors[1]
    assert blocking == vectors[0]
    assert model.collection == "altm_emb_8" and model.usage()["requests"] == 2


def test_a_remote_embedding_model_needs_its_dimensions() -> None:
    with pytest.raises(ValueError, match="DIMENSIONS"):
        OpenAIEmbeddings(LLMSettings(base_url="http://127.0.0.1:9/v1", model="emb"))


async def test_model_call_outcomes_are_counted_per_task() -> None:
    """Issue 16: failed, invalid and over-budget calls are counted apart from answered and cached ones."""
    from prometheus_client import REGISTRY

    def count(outcome: str) -> float:
        return REGISTRY.get_sample_value("altm_model_calls_total", {"task": "L2", "outcome": outcome}) or 0.0

    before = {o: count(o) for o in ("ok", "failed", "invalid", "over_budget")}
    script: Iterator[str | int] = iter([500, "this is not JSON", json.dumps({"value": 7})])
    with openai_double(lambda body: next(script)) as api:
        chat = _chat(api.base_url, MemoryLLMCache(), max_retries=0, token_budget=200)
        for question in ("a", "b"):
            with pytest.raises(Deferred):
                await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": question}], Answer)
        assert (await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "c"}], Answer)).value.value == 7
        with pytest.raises(Deferred, match="budget"):  # the double reports 100 tokens a call: 200 are spent
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "d"}], Answer)
        await chat.aclose()
    assert {o: count(o) - before[o] for o in before} == {"ok": 1, "failed": 1, "invalid": 1, "over_budget": 1}
