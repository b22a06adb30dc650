"""A capsule a model wrote, erased by its own id, stays word for word in the shard's model cache (and a replay
copies it into the new data dir).

Finding: since the model cache names the memories a prompt held (commit 08a5cbe, shard schema 20,
``llm_cache.sources``), an erasure removes only the entries whose ``sources`` meet what it erased
(``_TxErasure._drop_cached``, altm/store/_tx/_erasure.py:69-82; before, every entry of the user went with any
erasure). But ``sources`` lists the prompt's *inputs* only (fold: the session's messages,
altm/pipeline/processors/fold.py:253; extract: the message, altm/pipeline/processors/extract.py:106), never the
memory the *answer* became. The cached response is that memory's text: the model-written summary of an L1
capsule (or the paraphrase of a model-extracted atom). When the user erases that capsule by its id (it said
something wrong or private about them), the erasure's ``gone`` set holds the capsule and what was derived from
it, none of the messages, so ``_drop_cached`` keeps the entry: the erased summary stays readable in
``llm_cache.response`` at rest, and ``altm replay`` carries it into the new data dir (``copy_llm_cache``). The
README promises the erased content leaves "every store ... and the user's LLM cache", and
``test_erasure_bytes.py`` holds erased text to 0 occurrences in the data dir's files.

Reproduction: an L1 model (the OpenAI double) that summarises a session as "The user's therapist is Dr
Okonkwo-Lindqvist."; one message in session s1; erase the L1 capsule by its memory id; read ``llm_cache``.

Expected: no ``llm_cache`` row holds the erased capsule's summary after the erasure (the entry that produced the
erased memory goes with it: e.g. an erasure also drops the entries whose answer became an erased memory, by the
memory's ``prompt_hash`` provenance, or ``sources`` also names the memory made from the answer).
"""

from __future__ import annotations

import json
from typing import Any

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SUMMARY = "The user's therapist is Dr Okonkwo-Lindqvist."


async def test_a_model_capsule_erased_by_its_id_leaves_the_model_cache(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})

    def answer(body: dict[str, Any]) -> str | int:
        if body["response_format"]["json_schema"]["name"] == "CapsuleSummary":
            return json.dumps({"summary": SUMMARY, "decisions": [], "constraints": [], "corrections": [],
                               "open_questions": []})
        return 400

    with openai_double(answer) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="summariser", max_retries=0, timeout_s=30)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, "Let's plan the quarterly roadmap review for next Tuesday.",
                                        session="s1")])
            await rt.run_until_idle()
            (capsule,) = rows(s.data_dir, "SELECT memory_id, content, method FROM memories WHERE layer = 'L1'")
            assert capsule["method"] == "llm" and "Okonkwo-Lindqvist" in str(capsule["content"])
            assert rows(s.data_dir, "SELECT 1 FROM llm_cache WHERE response LIKE '%Okonkwo-Lindqvist%'")
            await app.erase(SCOPE, "memory", memory_id=str(capsule["memory_id"]))
            await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%Okonkwo-Lindqvist%'")
    # actual: the summariser's cached answer, the erased capsule's text, is still there
    cached = rows(s.data_dir, "SELECT model, response FROM llm_cache WHERE response LIKE '%Okonkwo-Lindqvist%'")
    assert cached == [], cached
