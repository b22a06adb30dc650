"""Erased content must not come back through the free-text fields of a model's atom.

What a user expects (README, Trust and erasure → One guarded door): a derived memory that "re-states an erased
raw message ... or says it again in other words" is refused "at every layer", whichever processor made it.
Model-free, an atom's attributes are cut from its own sentence (``rules.classify``: subject, pattern, why_bad,
better_alternative), so judging the content judges them too: "Maya got that nursing job in Leeds, she moves in
spring." said after the erasure of "My sister Maya is moving to Leeds ..." forms no atom.

On the model path, ``ExtractProcessor._model_atoms`` (altm/pipeline/processors/extract.py) copies the model's
``subject``, ``pattern``, ``why_bad`` and ``better_alternative`` into the atom's attributes as free text, not
bounded and not required to come from the content, while the write guard (``WriteGuard._tombstone``,
altm/pipeline/writer/guard.py) hashes ``mem.content`` only. A model answer whose content is bland and whose
``subject`` restates the erased message is stored, and the erased words are back in the shard (and on the
changes log, and in the vector index's payload source) under a live memory.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "My sister Maya is moving to Leeds for a nursing job in the spring."
LATER = "Maya got that nursing job in Leeds, she moves in spring."


def _extractor(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if text == LATER:
        return json.dumps({"atoms": [{"kind": "fact", "content": "The user shared some family news.",
                                      "subject": "sister Maya moving to Leeds for a nursing job in spring"}]})
    return json.dumps({"atoms": [{"kind": "fact", "content": text, "subject": "family"}]})


async def test_a_model_atom_cannot_carry_erased_words_in_its_attributes(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_extractor) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, ERASED, session="s1")])
            await rt.run_until_idle()
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            await rt.publish([make_turn(2, LATER, session="s2")])
            await rt.run_until_idle()
    assert len([r for r in api.chat_requests if "Leeds, she moves" in json.dumps(r["body"])]) == 1
    derived = rows(s.data_dir, "SELECT layer, content, attributes FROM memories WHERE layer != 'L0' "
                               "AND (content LIKE '%Leeds%' OR attributes LIKE '%Leeds%')")
    assert derived == [], derived
