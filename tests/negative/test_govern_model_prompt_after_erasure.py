"""A statement erased by its id while its facet's supersede question waits for a retry is sent to the governance
model afterwards: the fix for extract (commit 627e174) left govern's model path out.

Finding: this morning's fix made ``ExtractProcessor.process`` skip a message the shard no longer holds before its
text goes to the model (altm/pipeline/processors/extract.py:93-94, "erased since this change (a deferred or
lagging item): its text goes to no model"), as link does (link.py:104). ``GovernProcessor`` has the same kind of
deferred model call and no such check: ``_proposals`` takes the atom from the change event
(``committed_memory``, altm/pipeline/processors/govern.py:121-123), ``_facet`` builds its facet version and finds
the previous version (govern.py:170-199), and ``_should_supersede`` sends both contents to the GOVERNANCE model
(govern.py:211-219: "OLD: ...\\nNEW: <the atom's statement>"). When that call failed (the endpoint down, a 503),
the change's work item is deferred with the atom's text; an erasure by memory id destroys no key and drops no
deferred work (only an erased *session*'s is dropped), so when the endpoint is back the retry sends the erased
statement to the model, after the erasure, and the answer is cached under the user's home (``llm_cache``). The
same holds for a govern stage that lags behind the writer (a Kafka consumer, a restarted worker).

Reproduction: a GOVERNANCE model endpoint (the OpenAI double) that answers 503 at first. The user says "I prefer
dark mode in the editor." and then "I prefer light mode in the editor, my wifi password is Zanzibar4417." (one
facet key, two statements: govern asks the model whether the second supersedes the first, and defers on the 503).
The second message is erased by its memory id (``app.erase(scope, "memory", ...)``); the endpoint recovers and
the runtime runs until idle (retrying deferred work, backoff 0).

Expected: nothing of an erased statement reaches a model after its erasure: govern (like extract and link) skips
an atom the shard no longer holds before asking the model (or an erasure drops the deferred work about what it
erased). No chat request after the erasure holds the secret.
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

SECRET = "Zanzibar4417"
SAID = "I prefer dark mode in the editor."
ERASED = f"I prefer light mode in the editor, my wifi password is {SECRET}."


class Endpoint:
    """A governance model that is down (503) until ``up`` is set; then it supersedes."""

    def __init__(self) -> None:
        self.up = False

    def __call__(self, body: dict[str, Any]) -> str | int:
        if not self.up:
            return 503
        if body["response_format"]["json_schema"]["name"] != "SupersedeRubric":
            return 400
        return json.dumps({"supersede": True, "confidence": 0.9, "reason": "the value changed"})


async def test_an_erased_statement_is_not_sent_to_the_governance_model_afterwards(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    endpoint = Endpoint()
    with openai_double(endpoint) as api:
        llm = {ModelTask.GOVERNANCE: LLMSettings(base_url=api.base_url, model="governor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, SAID), make_turn(2, ERASED)])
            await rt.run_until_idle()
            assert rt.work.count() >= 1, "govern deferred nothing while its endpoint was down"
            (message,) = [r for r in rows(s.data_dir, "SELECT memory_id, content FROM memories WHERE layer='L0'")
                          if r["content"] == ERASED]
            await app.erase(SCOPE, "memory", memory_id=message["memory_id"])
            await rt.run_until_idle()
            erased_at = len(api.chat_requests)
            endpoint.up = True
            await rt.run_until_idle()
        after = [r for r in api.chat_requests[erased_at:] if SECRET in json.dumps(r["body"])]
    assert not rows(s.data_dir, "SELECT memory_id FROM memories WHERE content LIKE ?", (f"%{SECRET}%",))
    assert after == [], f"{len(after)} chat request(s) sent the erased statement to the model after its erasure"
