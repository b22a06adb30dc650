from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from altm.core import Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelClients, Stage, stage_settings
from altm.pipeline.processors import Deferred
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")


class Answer(BaseModel):
    value: int


def _clients(base_url: str, cache: MemoryLLMCache, **extra: Any) -> ModelClients:
    return ModelClients(lambda scope: cache, {Stage.L2: LLMSettings(base_url=base_url, model="m", **extra)})


def test_stage_settings_inherit_the_global_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALTM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ALTM_LLM_MODEL", "general")
    monkeypatch.setenv("ALTM_NLI_LLM_MODEL", "nli-small")
    monkeypatch.setenv("ALTM_NLI_LLM_TOKEN_BUDGET", "1000")
    nli, l2 = stage_settings(Stage.NLI), stage_settings(Stage.L2)
    assert nli.model == "nli-small" and nli.base_url == "http://127.0.0.1:9/v1" and nli.token_budget == 1000
    assert l2.model == "general" and l2.token_budget is None and l2.configured


def test_unconfigured_stage_is_model_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALTM_LLM_MODEL", raising=False)
    monkeypatch.delenv("ALTM_L1_LLM_MODEL", raising=False)
    assert not stage_settings(Stage.L1).configured
    clients = ModelClients(lambda scope: MemoryLLMCache(), {})
    assert not clients.configured(Stage.L1)


async def test_retries_transient_errors_with_backoff() -> None:
    calls = {"n": 0}

    def answer(body: dict[str, Any]) -> str | int:
        calls["n"] += 1
        return 503 if calls["n"] == 1 else json.dumps({"value": 7})

    with openai_double(answer) as api:
        clients = _clients(api.base_url, MemoryLLMCache(), max_retries=2)
        result = await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        await clients.aclose()
    assert result.value.value == 7 and not result.cached
    assert len(api.chat_requests) == 2


async def test_cache_is_keyed_by_model_and_prompt() -> None:
    cache = MemoryLLMCache()
    with openai_double(lambda body: json.dumps({"value": 1})) as api:
        clients = _clients(api.base_url, cache)
        first = await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        second = await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "q"}], Answer)
        other = await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "other"}], Answer)
        await clients.aclose()
    assert second.cached and not first.cached and not other.cached
    assert first.prompt_hash == second.prompt_hash != other.prompt_hash
    assert len(api.chat_requests) == 2
    assert clients.usage()["L2"] == {"requests": 2, "tokens": 200}


async def test_fenced_json_is_accepted_and_prose_is_deferred() -> None:
    answers = iter(["```json\n{\"value\": 3}\n```", "The answer is three."])
    with openai_double(lambda body: next(answers)) as api:
        clients = _clients(api.base_url, MemoryLLMCache())
        ok = await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "a"}], Answer)
        with pytest.raises(Deferred, match="does not match Answer"):
            await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": "b"}], Answer)
        await clients.aclose()
    assert ok.value.value == 3


async def test_rate_limit_spaces_requests() -> None:
    import time

    with openai_double(lambda body: json.dumps({"value": 1})) as api:
        clients = _clients(api.base_url, MemoryLLMCache(), rate_per_minute=600)  # one per 0.1 s
        start = time.monotonic()
        for i in range(3):
            await clients.structured(Stage.L2, SCOPE, [{"role": "user", "content": str(i)}], Answer)
        elapsed = time.monotonic() - start
        await clients.aclose()
    assert elapsed >= 0.2


async def test_remote_embeddings() -> None:
    with openai_double(lambda body: "") as api:
        clients = ModelClients(lambda scope: MemoryLLMCache(), {
            Stage.EMBEDDING: LLMSettings(base_url=api.base_url, model="emb", dimensions=8)})
        vectors = await clients.embed(["a", "b"])
        await clients.aclose()
    assert len(vectors) == 2 and len(vectors[0]) == 8 and vectors[0] != vectors[1]
