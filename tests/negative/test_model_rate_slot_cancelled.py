"""A model call cancelled while it waits for its rate slot keeps the slot reserved (``_Endpoint._check_budget``
advances ``next_slot`` before the wait; nothing gives it back). prepare_turn now starts every long memory's
compression at once and cancels those not back within the L1 timeout (``_model_compressions``): with a rate limit,
each turn reserves a slot per long memory but uses only those answered in time, so ``next_slot`` runs ahead of the
clock turn after turn; the next turn's compressions (and the fold stage's, same L1 endpoint) wait for slots nobody
used, and soon every compression of every turn is cancelled without a request sent."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pydantic import BaseModel

from altm.core import Scope
from altm.models import LLMSettings, MemoryLLMCache, ModelTask, OpenAIChat
from tests.support.openai_double import openai_double

SCOPE = Scope(tenant_id="t", workspace_id="w", user_id="u", agent_id="a")


class Text(BaseModel):
    text: str


def _answer(body: dict[str, Any]) -> str:
    return json.dumps({"text": "short"})


async def test_cancelled_waits_give_back_their_rate_slots() -> None:
    with openai_double(_answer) as api:
        chat = OpenAIChat(lambda scope: MemoryLLMCache(), {ModelTask.L1: LLMSettings(
            base_url=api.base_url, model="m", max_retries=0, rate_per_minute=60)})  # one request a second
        calls = [asyncio.ensure_future(chat.structured(ModelTask.L1, SCOPE, [{"role": "user", "content": f"m{i}"}],
                                                       Text)) for i in range(8)]
        _, late = await asyncio.wait(calls, timeout=0.5)  # what _model_compressions does at its deadline
        for call in late:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        assert len(api.chat_requests) == 1
        await asyncio.sleep(0.6)  # a second after the one request sent: the next slot is free
        start = time.perf_counter()
        try:
            await asyncio.wait_for(chat.structured(ModelTask.L1, SCOPE, [{"role": "user", "content": "next"}], Text),
                                   timeout=2.0)
        except TimeoutError:
            raise AssertionError(f"one request sent a second ago, yet the next call still waited "
                                 f"{time.perf_counter() - start:.1f}s+ for slots the 7 cancelled calls never "
                                 "used") from None
        finally:
            await chat.aclose()
