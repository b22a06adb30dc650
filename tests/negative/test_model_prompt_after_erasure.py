"""A message erased by its id while its extraction waits for a retry is sent to the model afterwards, and the
answer, quoting it, is kept in the LLM cache.

Finding: erasing one memory destroys no key (README, Crypto-shredding: "its tombstone keeps it from coming back,
and the log keeps its session's records"), and only an erased *session*'s deferred work is dropped. The extract
stage's work item for the message (deferred while the L2 endpoint was down) still carries the message's content.
``ExtractProcessor.process`` (altm/pipeline/processors/extract.py:89-94) never asks whether the message is still
stored, where ``LinkProcessor.process`` does (``ctx.require_reader().holds``, link.py:104). So when the endpoint
is back, the retry sends the erased text to the model, after the erasure, and ``OpenAIChat.structured``
(altm/models/_openai.py:154 and 184) keeps the answer: its erasure marker is taken *after* the erasure, so
nothing has changed since and ``ShardLLMCache.put`` stores it under the user's home. The writer voids the atom
(its evidence is erased), but the erased text (here a gate code) is at rest in the shard's ``llm_cache`` until the
user's next erasure, and ``altm replay`` copies it into a new data dir (``copy_llm_cache``): what the README
promises an erasure removes ("… and the user's LLM cache"; ``test_erasure_bytes.py``: 0 occurrences in the data
dir). The same holds for a stage that lags behind the writer (a Kafka consumer, a restarted worker).

Reproduction: an L2 model endpoint (the OpenAI double) that answers 503 at first, so extract defers the
message's work item; the message is erased by its memory id (``app.erase(scope, "memory", ...)``); the endpoint
recovers and the runtime runs until idle (retrying deferred work, backoff 0).

Expected: nothing of an erased message reaches a model after its erasure, and nothing quoting it is cached:
extract skips a message the shard no longer holds (as link does), and/or an erasure drops the deferred work and
the pending model calls about the memories it erased. No chat request after the erasure holds the secret, and
no ``llm_cache`` row does.
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

SECRET = "4417-Zanzibar"
MESSAGE = f"My gate code is {SECRET} and the spare key sits under the blue flowerpot."


class Endpoint:
    """An extractor that is down (503) until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False

    def __call__(self, body: dict[str, Any]) -> str | int:
        if not self.up:
            return 503
        if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
            return 400
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return json.dumps({"atoms": [{"kind": "fact", "content": text}]})


async def test_an_erased_message_is_not_extracted_by_a_model_afterwards(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    endpoint = Endpoint()
    with openai_double(endpoint) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, MESSAGE), make_turn(2, "Thanks, noted.")])
            await rt.run_until_idle()
            assert rt.work.count() >= 1, "extract deferred nothing while its endpoint was down"
            (message,) = [r for r in rows(s.data_dir, "SELECT memory_id, content FROM memories WHERE layer='L0'")
                          if r["content"] == MESSAGE]
            await app.erase(SCOPE, "memory", memory_id=message["memory_id"])
            await rt.run_until_idle()
            erased_at = len(api.chat_requests)
            endpoint.up = True
            await rt.run_until_idle()
        after = [r for r in api.chat_requests[erased_at:] if SECRET in json.dumps(r["body"])]
    assert not rows(s.data_dir, "SELECT memory_id FROM memories WHERE content LIKE ?", (f"%{SECRET}%",))
    cached = rows(s.data_dir, "SELECT model, response FROM llm_cache WHERE response LIKE ?", (f"%{SECRET}%",))
    assert cached == [], f"the erased message's extraction is cached after its erasure: {cached}"
    assert after == [], f"{len(after)} chat request(s) sent the erased message to the model after its erasure"
