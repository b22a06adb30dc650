"""A model atom is refused for its topic label: the guard judges a short ``subject`` as a statement (red-team
review of the guard on attributes).

What a user expects (README, One guarded door: an erasure refuses what "re-states an erased raw message ... or
says it again in other words", not every later memory about the same system): after the user erased "the
billing service keeps timing out during checkout and I want to quit my job", their later, unrelated decision to
add retries to the billing service's checkout calls is remembered. Its atom's content passes the guard (it
shares three terms with the erased message out of its eight: below the 0.65 share). But the model labelled its
subject "checkout in the billing service", three terms and all three the erased message's: the guard's share is
taken of the smaller side (``min(len(candidate), len(marks))``), so a topic label of three words always
"re-states" any erased message that named the topic, and the whole atom is refused. The same atom with the
subject "retries" is stored: what decides is a label, not the statement.
Suspected cause: altm/pipeline/writer/guard.py ``WriteGuard._attributes_erased`` (``_free_text`` judged with
``self._tombstone`` as if it were content): a short attribute should only be refused for what is specific or
exact in it (a quote, a specific term, a name with its terms), not by the term share meant for statements; or
the attribute dropped from the atom rather than the atom refused.
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

ERASED = "I think the billing service keeps timing out during checkout and I want to quit my job."
LATER = "We should add retries to the checkout calls of the billing service."
ATOM = "The team will add retries to the billing service calls made at checkout."


def _extractor(subject: str) -> Any:
    def answer(body: dict[str, Any]) -> str | int:
        if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
            return 400
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if text == LATER:
            return json.dumps({"atoms": [{"kind": "decision", "content": ATOM, "subject": subject}]})
        return json.dumps({"atoms": [{"kind": "fact", "content": text, "subject": "work"}]})
    return answer


async def _atoms_after_erasure(settings: Settings, subject: str) -> list[dict[str, Any]]:
    with openai_double(_extractor(subject)) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(settings, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, ERASED, session="s1")])
            await rt.run_until_idle()
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            await rt.publish([make_turn(2, LATER, session="s2")])
            await rt.run_until_idle()
    return rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L2'")


async def test_the_same_atom_labelled_otherwise_is_stored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    assert await _atoms_after_erasure(s, "retries") == [{"content": ATOM}]  # holds: the content passes


async def test_a_topic_label_does_not_refuse_the_atom(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    assert await _atoms_after_erasure(s, "checkout in the billing service") == [{"content": ATOM}]  # actual: []
