"""prepare_turn's model compressions now start all at once (``_model_compressions``), and each is admitted by the
L1 token budget when it starts (``_Endpoint._check_budget`` compares what was spent so far; nothing is reserved for
calls in flight). Every long memory of a turn passes the check before any answer is charged: a turn with N long
memories sends N prompts though the budget allowed one (before, one after another, the second found it spent).
The round-14 budget fix (a timed-out prompt charged so prompts stop past the budget) is undone for L1."""

from __future__ import annotations

import json
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.negative.test_prepare_compression_deadline import QUESTION, store_long_notes
from tests.support.memories import embedded
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE


def _answer(body: dict[str, Any]) -> str:
    return json.dumps({"text": "Invoices moved to the ledger cluster."})


async def test_one_turns_compressions_stay_within_the_token_budget(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    await store_long_notes(s)
    with openai_double(_answer) as api:  # each answer reports 100 tokens
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="m", max_retries=0, token_budget=100)}
        async with embedded(s, llm_settings=llm) as dep:
            prepared = await dep.app.prepare_turn(SCOPE, "s1", "t-ask", QUESTION, 400)
    assert prepared.bundle.memory_ids
    assert len(api.chat_requests) == 1, (
        f"a budget of 100 tokens (one answer's worth) let {len(api.chat_requests)} compression prompts out in one "
        "turn")
