"""A model answer cached for one tenant answers another tenant's identical prompt: a cross-tenant oracle.

Finding: the LLM response cache lives in the shard of the scope (``ShardLLMCache``, altm/store/_llm_cache.py)
and every entry records the ``home`` whose content its prompt held, but it is looked up by model and prompt
hash only: ``CACHE_GET = "SELECT response FROM llm_cache WHERE model=? AND prompt_hash=?"``
(altm/store/_sql.py:22; the table's key is ``(model, prompt_hash)``, altm/store/sql/0001_init.sql:288-295),
called from ``OpenAIChat.structured`` (altm/models/_openai.py:143-148) with no home.
A shard holds every user whose home hashes to its partition, of every tenant, so a prompt one tenant's message
produced answers any other tenant's identical prompt from the cache. The extraction prompt is the system
prompt and the message itself (``ExtractProcessor._model_atoms``, altm/pipeline/processors/extract.py:103), so
whether a tenant's message is answered from the cache says whether *another tenant on the shard* has sent
exactly that message: a confirmation oracle for guessed content ("Our acquisition target is Initech.", "Dana's
salary is 85,000."). The answer is visible without any key at ``GET /metrics``
(``altm_model_calls_total{task="L2",outcome="cached"}`` moves), and in how fast the atom appears (no model
call). README speaks of "the user's LLM cache" (Trust and erasure → Erasure); it is the shard's.

Reproduction: a ``globex`` user on the same shard as ``acme/platform/dana`` says a sentence (its atoms are
extracted by the model); then dana says the same sentence. The model is not asked about dana's message (one
request for the two), and the ``cached`` counter goes up by one.

Expected: a cached answer serves only the home that stored it (the home is part of the key: ``WHERE model=?
AND prompt_hash=? AND home=?``, and the table's key with it), so dana's message goes to the model and nothing
dana can observe depends on what another tenant said.
"""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import REGISTRY

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.turns import colocated_scope, make_turn

GUESS = "Our acquisition target is Initech and the deal closes on March 3."


def _extractor(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.dumps({"atoms": [{"kind": "fact", "content": text, "subject": "acquisition"}]})


def _cached_l2() -> float:
    return REGISTRY.get_sample_value("altm_model_calls_total", {"task": "L2", "outcome": "cached"}) or 0.0


async def test_one_tenants_cached_answer_does_not_answer_another_tenant(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    victim = colocated_scope(s.partitions)
    with openai_double(_extractor) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt = runtime_of(deployment)
            await rt.publish([make_turn(1, GUESS, scope=victim, session="v1")])
            await rt.run_until_idle()
            asked_for_victim = len(api.user_texts())
            before = _cached_l2()
            await rt.publish([make_turn(2, GUESS, session="s1")])  # dana, tenant acme, says the same
            await rt.run_until_idle()
            after = _cached_l2()
    assert asked_for_victim == 1
    assert after == before, (
        f"dana's message was answered from the cache entry of {victim.home} (altm_model_calls_total cached "
        f"{before} -> {after}): dana learns that another tenant said exactly this")
    assert api.user_texts() == [GUESS, GUESS], "the model was asked about the sentence once, for two tenants"
