"""A usage report out of range must not throw away the message a valid answer was about.

What a user expects (README, Models): "A failed call, an invalid answer or an exhausted budget defers the work
item (kept in the shard, retried with backoff ...), never an invented answer"; the model is untrusted input,
and README's hostile-input section promises one bad record never loses the others' work. An answer whose
content is a valid ``ExtractionResult`` but whose ``usage`` says ``prompt_tokens: -50`` should at worst be
deferred; the atom it describes is fine.

``_Endpoint.spent`` (altm/models/_openai.py) feeds the endpoint's numbers straight into Prometheus counters:
``MODEL_TOKENS.labels(...).inc(prompt)`` raises ``ValueError: Counters can only be incremented by non-negative
amounts`` for a negative count. ``spent`` is called outside the ``OpenAIError`` handler, so ``structured``
raises a plain ``ValueError`` (not ``Deferred``), which the stage driver (``_one`` in altm/pipeline/_drivers.py)
treats as a processor bug: the turn's change is dead-lettered for extract, with no deferred work and no atom. A
negative ``total_tokens`` also lowers ``tokens_used`` (the budget), before the raise.
"""

from __future__ import annotations

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import running
from tests.support.openai_double import one_fact, openai_double
from tests.support.rows import rows
from tests.support.turns import make_turn

SAID = "We moved the billing service to the new cluster."


async def test_a_negative_usage_report_does_not_dead_letter_the_message(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})
    with openai_double(one_fact, usage={"prompt_tokens": -50, "completion_tokens": 10, "total_tokens": -40}) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(1, SAID)])
            await rt.run_until_idle()
            deferred = rt.work.count()
    assert len(api.chat_requests) == 1
    atoms = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L2'")
    assert atoms == [{"content": SAID}] or deferred == 1, (atoms, deferred)
