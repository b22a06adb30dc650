"""A slow summarisation model holds ``prepare_turn`` for one model timeout per long memory in the bundle.

What a user expects (README, Recall and the runtime protocol; DESIGN section 5): ``prepare_turn`` is the
synchronous call a host makes before every answer; the model compression of long prose is optional ("the
extractive compression stands in, labelled as such", altm/app/_protocol.py ``_model_compressions``), and the
memory pipeline "must work, honestly labelled, with no model". A model that does not answer should cost a turn
at most about one model timeout, after which the extractive compression is used.

``_model_compressions`` (altm/app/_protocol.py) awaits one ``chat.structured`` call per long prose hit, one after
the other, each with the task's full timeout (``ALTM_L1_LLM_TIMEOUT_S``, 60 s by default) and the openai
client's retries (``MAX_RETRIES``, 2 by default: three tries). Nothing bounds the whole step and a failure of one
hit does not stop the next: with an endpoint that hangs, a bundle with N long memories waits
N x (retries + 1) x timeout (with the defaults and 5 long memories, 15 minutes) before the host gets its context,
and every turn pays it again (a timeout is not cached).
"""

from __future__ import annotations

import time
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import SCOPE, make_turn

TIMEOUT_S = 1.0


QUESTION = "Which ledger cluster holds the invoices of the billing migration?"


async def store_long_notes(settings: Settings) -> None:
    """Five notes each too long for its share of a 400-token bundle, stored without a model (recall then asks
    the summarisation model to compress each)."""
    notes = [" ".join(f"Billing migration note {n}.{i}: invoices of region {i} moved to ledger cluster {n}."
                      for i in range(40)) for n in range(1, 6)]
    async with embedded(settings) as dep:
        rt = runtime_of(dep)
        await rt.publish([make_turn(n, text) for n, text in enumerate(notes, start=1)])
        await rt.run_until_idle()


def _hangs(body: dict[str, Any]) -> str:
    time.sleep(4 * TIMEOUT_S)
    return '{"text": "late"}'


async def test_a_hung_compression_model_costs_prepare_turn_about_one_timeout(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    await store_long_notes(s)
    with openai_double(_hangs) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="m", max_retries=0, timeout_s=TIMEOUT_S)}
        async with embedded(s, llm_settings=llm) as dep:
            start = time.perf_counter()
            prepared = await dep.app.prepare_turn(SCOPE, "s1", "t-ask", QUESTION, 400)
            elapsed = time.perf_counter() - start
    asked = len(api.chat_requests)
    assert prepared.bundle.memory_ids
    assert asked >= 1, "no compression was asked of the model"
    assert elapsed < 2 * TIMEOUT_S, (
        f"prepare_turn took {elapsed:.1f}s: {asked} compression calls waited {TIMEOUT_S}s each, one after another")
