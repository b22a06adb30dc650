"""A token budget bounds what is sent to the model, also when the model times out.

What a user expects (README, Models; DESIGN section 4): ``ALTM_<TASK>_LLM_TOKEN_BUDGET`` is "Total tokens this
task may spend", and "the budget counts about four bytes a token where the endpoint reports no usage (or zero)
... a budget must not rest on the endpoint's word" (``_Endpoint.spent``).

``OpenAIChat.structured`` (altm/models/_openai.py) charges a call that raised ``OpenAIError`` nothing:
``endpoint.spent(None)`` returns before any token is counted. A call that timed out had its whole prompt sent
and processed by the endpoint (a hosted endpoint bills it; the client only stopped waiting), and the openai
client's own retries (``max_retries``) send it again, uncharged too. Each deferred item is then tried again
with backoff, so an endpoint that is slow for every prompt is sent prompt after prompt for ever, and a budget of
200 tokens does not stop prompts of ~700 tokens: it never moves from 0.
"""

from __future__ import annotations

import time
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import running
from tests.support.openai_double import openai_double
from tests.support.turns import make_turn


def _slow(body: dict[str, Any]) -> str:
    time.sleep(1.0)  # past the client's timeout: the prompt was received, the answer never read
    return '{"atoms": []}'


async def test_timed_out_prompts_count_against_the_token_budget(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})
    with openai_double(_slow) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="m", max_retries=0, timeout_s=0.3,
                                         token_budget=200)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(i, f"Message {i}: " + "the billing ledger moved to cluster seven. " * 60)
                              for i in range(1, 5)])
            await rt.run_until_idle()
            deferred = rt.work.count()
    prompts = len(api.chat_requests)
    assert deferred == 4  # every extraction waits for the model (timed out or over budget): nothing lost
    # each prompt is ~700 tokens (about four bytes a token): the first one sent spends the budget of 200
    assert prompts <= 1, f"{prompts} prompts of ~700 tokens were sent under a token budget of 200"
