"""A model answer that arrives after an erasure must not put the erased content back into the LLM cache.

What a user expects (README, Trust and erasure → Erasure): the writer removes the erased content "and
everything derived from it from the shard, ... and the user's LLM cache"; replaying the log "does not bring the
content back", and ``test_erasure_bytes.py`` promises 0 occurrences of an erased secret in every file of the
data dir.

``OpenAIChat.structured`` (altm/models/_openai.py, the ``cache.put`` after the call) writes the answer into
the scope's shard whenever the call returns, with no check that the content the prompt held still exists. The
recall service compresses long prose with the L1 model inside ``prepare_turn``
(``ProtocolService._model_compressions``, altm/app/_protocol.py): a compression of a memory that is erased
while the model is answering is cached *after* the erasure's ``DELETE FROM llm_cache WHERE home=?``
(``ShardTx.scrub``). The erased text then stays in the shard at rest until the user's next erasure, and
``altm replay`` copies it into the new data dir (``copy_llm_cache``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SECRET = "Zanzibar-4417"
STORY = " ".join(f"On day {i} the billing migration team reviewed invoice batch {i} and found nothing unusual "
                 f"about refunds." for i in range(60)) + f" The vault passphrase is {SECRET} for the archive."


async def test_a_compression_answered_after_an_erasure_is_not_cached(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    release = threading.Event()
    asked = threading.Event()

    def answer(body: dict[str, Any]) -> str | int:
        name = body["response_format"]["json_schema"]["name"]
        if name == "CapsuleSummary":
            return json.dumps({"summary": "Invoice reviews.", "decisions": [], "constraints": [],
                               "corrections": [], "open_questions": []})
        if name == "CompressedText":
            asked.set()
            release.wait(30)  # the model is still answering while the erasure is applied
            return json.dumps({"text": f"Sixty days of invoice reviews; the vault passphrase is {SECRET}."})
        return 400

    with openai_double(answer) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="summariser", max_retries=0, timeout_s=30)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, STORY, session="s1")])
            await rt.run_until_idle()
            prepare = asyncio.create_task(app.prepare_turn(SCOPE, "s1", "s1-q", "vault passphrase invoices", 300))
            for _ in range(300):
                if asked.is_set() or prepare.done():
                    break
                await asyncio.sleep(0.05)
            assert asked.is_set(), "the compression model was never asked"
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE ?", (f"%{SECRET}%",))
            release.set()
            await prepare
            await rt.run_until_idle()
    cached = rows(s.data_dir, "SELECT home, response FROM llm_cache WHERE response LIKE ?", (f"%{SECRET}%",))
    assert cached == [], cached
