"""Which failed model requests are tried again, after how long, and how each attempt is counted (red-team round
14: the ``openai`` client's own retries were not charged to the budget nor spaced by the rate limit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx  # the openai client's own HTTP types
import openai
import pytest
from pydantic import BaseModel

from altm.core import Deferred, Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelTask, OpenAIChat
from altm.models._attempts import delay_s, received, retried
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


class Answer(BaseModel):
    value: int


def _status(code: int, **headers: str) -> openai.APIStatusError:
    return openai.APIStatusError("scripted", response=httpx.Response(code, headers=headers, request=REQUEST),
                                 body=None)


@pytest.mark.parametrize(("error", "again"), [
    (_status(429), True), (_status(503), True), (_status(408), True), (_status(409), True),
    (_status(400), False), (_status(401), False), (_status(404), False),
    (_status(500, **{"x-should-retry": "false"}), False), (_status(400, **{"x-should-retry": "true"}), True),
    (openai.APITimeoutError(request=REQUEST), True), (openai.APIConnectionError(request=REQUEST), True),
])
def test_which_failures_are_tried_again(error: openai.OpenAIError, again: bool) -> None:
    assert retried(error) is again


def test_the_wait_before_the_next_attempt() -> None:
    assert delay_s(_status(429, **{"retry-after": "3"}), 0) == 3.0  # the endpoint's word, up to a minute
    for attempt, most in ((0, 0.5), (1, 1.0), (2, 2.0), (6, 8.0)):  # doubled, capped at 8 s, less a jitter
        waits = [delay_s(_status(503, **{"retry-after": "600"}), attempt) for _ in range(50)]
        assert all(0.75 * most <= w <= most for w in waits), (attempt, min(waits), max(waits))


def test_only_a_timed_out_request_reached_the_endpoint() -> None:
    assert received(openai.APITimeoutError(request=REQUEST))
    assert not received(openai.APIConnectionError(request=REQUEST)) and not received(_status(503))


async def test_every_attempt_is_a_request_and_a_refusal_is_not_tried_again() -> None:
    script: Iterator[str | int] = iter([503, json.dumps({"value": 7}), 400])

    def answer(body: dict[str, Any]) -> str | int:
        return next(script)

    with openai_double(answer) as api:
        chat = OpenAIChat(lambda scope: MemoryLLMCache(),
                          {ModelTask.L2: LLMSettings(base_url=api.base_url, model="m", max_retries=3)})
        ok = await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "a"}], Answer)
        with pytest.raises(Deferred, match="BadRequestError"):
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "b"}], Answer)
        await chat.aclose()
    assert ok.value.value == 7
    assert len(api.chat_requests) == 3  # 503, then its answer; the 400 once
    assert chat.usage()["L2"] == {"requests": 3, "tokens": 100}  # the one answered reported 100 tokens


async def test_a_retry_waits_for_the_budget() -> None:
    """An attempt after a timeout is admitted by the budget like the first: the timed-out prompt was charged."""
    import time

    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.6)
        return json.dumps({"value": 1})

    with openai_double(slow) as api:
        chat = OpenAIChat(lambda scope: MemoryLLMCache(), {ModelTask.L2: LLMSettings(
            base_url=api.base_url, model="m", max_retries=5, timeout_s=0.2, token_budget=100)})
        with pytest.raises(Deferred, match="budget"):
            await chat.structured(ModelTask.L2, SCOPE, [{"role": "user", "content": "x" * 800}], Answer)
        await chat.aclose()
    assert len(api.chat_requests) == 1  # the second attempt found ~200 tokens charged against 100
    assert chat.usage()["L2"]["tokens"] >= 200
