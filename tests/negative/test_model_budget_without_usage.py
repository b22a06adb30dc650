"""A task's token budget must hold whatever the endpoint reports about its own usage.

What a user expects (README, Models): ``ALTM_<TASK>_LLM_TOKEN_BUDGET`` is the total a task may spend, and an
exhausted budget defers the work ("never an invented answer"); the cost metric counts what was spent. The
test ``test_budget_exhausted_defers_without_partial_writes`` checks it against an endpoint that reports
``usage``.

``_Endpoint.spent`` (altm/models/_openai.py) counts only the ``usage.total_tokens`` the endpoint chooses to
send: an OpenAI-compatible server (or proxy) that leaves ``usage`` out, or sends 0, is never charged, so the
budget is never reached and every message is sent to the model, without limit, while ``usage()`` and the
token metrics report 0 tokens spent. The endpoint is untrusted input; the prompt and the answer are in hand
and can be counted (``altm.recall.context._tokens.count_tokens``) when the report is missing or implausible.
"""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import running
from tests.support.openai_double import one_fact, openai_double
from tests.support.turns import make_turn


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}],
                         ids=["no-usage", "zero-usage"])
async def test_a_budget_holds_when_the_endpoint_does_not_report_usage(settings: Settings,
                                                                     usage: dict[str, int] | None) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})
    with openai_double(one_fact, usage=usage) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0, token_budget=100)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(i, f"We moved service number {i} of the billing platform to the new "
                                           f"cluster in region {i}.") for i in range(1, 7)])
            await rt.run_until_idle()
    # each prompt alone (system message and turn) is well over 50 tokens: a budget of 100 allows two calls at most
    assert len(api.chat_requests) <= 2, f"{len(api.chat_requests)} calls on a budget of 100 tokens"
