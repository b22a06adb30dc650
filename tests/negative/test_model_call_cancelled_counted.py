"""A hung summarisation model now ends in cancellation (prepare_turn's one L1 deadline, ``_model_compressions``),
not in the client's APITimeoutError: ``_completion`` (altm/models/_openai.py) charges the cancelled prompt but
counts the call under no outcome of ``altm_model_calls`` (its latency is still observed). A model that never
answers a compression shows no failures at all; the metric's "every call by outcome" no longer holds."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import REGISTRY
from pydantic import BaseModel

from altm.core import Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelTask, OpenAIChat
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")
OUTCOMES = ("ok", "cached", "failed", "invalid", "over_budget", "cancelled")


class Text(BaseModel):
    text: str


def _hangs(body: dict[str, Any]) -> str:
    time.sleep(2.0)
    return '{"text": "late"}'


def _calls() -> float:
    return sum(REGISTRY.get_sample_value("altm_model_calls_total", {"task": "L1", "outcome": o}) or 0.0
               for o in OUTCOMES)


async def test_a_call_cancelled_at_the_deadline_is_counted() -> None:
    with openai_double(_hangs) as api:
        chat = OpenAIChat(lambda scope: MemoryLLMCache(), {ModelTask.L1: LLMSettings(
            base_url=api.base_url, model="m", max_retries=0, timeout_s=1.0)})
        before = _calls()
        call = asyncio.ensure_future(chat.structured(ModelTask.L1, SCOPE, [{"role": "user", "content": "m"}], Text))
        await asyncio.wait([call], timeout=0.5)  # the compression deadline
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        await chat.aclose()
    assert len(api.chat_requests) == 1 and chat.usage()["L1"]["requests"] == 1  # sent and charged
    assert _calls() - before == 1, "a call sent, charged and given up on is counted under no outcome"
    assert (REGISTRY.get_sample_value("altm_model_calls_total", {"task": "L1", "outcome": "cancelled"}) or 0) >= 1
