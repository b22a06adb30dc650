"""A replay sends a message erased by its id to the remote embedding model.

Finding: an erasure of one memory destroys no key (README, "Crypto-shredding of the log"), so a replay from
the log's start opens the erased message again and stores it, its tombstone carried *pending* until the
replay meets the erasure (altm/wiring/_replay.py:160-161). Commit e691c12 made every chat stage leave such a
memory out ("Stages send no model a memory whose erasure is pending": extract, link, govern and verify ask
``MemoryReader.erasure_pending``, altm/store/_reader.py:65-75), but the embed stage does not:
``EmbedProcessor.process_batch`` / ``put`` (altm/pipeline/processors/embed.py:116-134, :151-177) embed every
committed memory, and ``_vectors`` (:179-189) finds no vector to reuse in the source's index (the source
deleted the erased memory's point), so it calls ``embedding.aembed`` with the erased text. With a remote
embedding model (``ALTM_EMBEDDING_LLM_*``) that is the erased message — and the model-free atom derived
from it, with the same words — sent to a third-party endpoint by a replay, long after the user had it erased.

Reproduction: a remote embedding model (the OpenAI double, 16 dims); two sessions of one user; erase the s1
message by its memory id; ``replay_into`` a fresh data dir with the same embedding model configured
(``ALTM_EMBEDDING_LLM_*``), and read the texts of the embedding requests made during the replay.

Expected: no embedding request of the replay holds the erased message's text (the replay embeds only what
differs from the source's index and is not pending erasure); e.g. the embed stage leaves out the memories
whose erasure is pending (``ctx.reader.erasure_pending``), as the chat stages do — the erasure, once
reached, removes them anyway.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from altm.wiring import replay_into
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import OpenAIDouble, openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "My locker combination at the gym is 4417-ORCHID, keep it private."
KEPT = "I prefer dark roast coffee in the morning before standup."


def _embedded_texts(api: OpenAIDouble, since: int) -> list[str]:
    return [str(t) for r in api.requests[since:] if r["path"].endswith("/embeddings")
            for t in (r["body"]["input"] if isinstance(r["body"]["input"], list) else [r["body"]["input"]])]


async def test_a_replay_never_embeds_a_message_erased_by_its_id(settings: Settings, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(lambda _: 400) as api:
        env = {"ALTM_EMBEDDING_LLM_BASE_URL": api.base_url, "ALTM_EMBEDDING_LLM_MODEL": "embedder",
               "ALTM_EMBEDDING_LLM_DIMENSIONS": "16", "ALTM_EMBEDDING_LLM_MAX_RETRIES": "0"}
        llm = {ModelTask.EMBEDDING: LLMSettings(base_url=api.base_url, model="embedder", dimensions=16,
                                                max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            assert deployment.vectors is not None
            await rt.publish([make_turn(1, ERASED, session="s1"), make_turn(2, KEPT, session="s2")])
            await rt.run_until_idle()
            assert any("4417-ORCHID" in t for t in _embedded_texts(api, 0))  # the probe sees it embedded
            (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id='s1'")
            await app.erase(SCOPE, "memory", memory_id=str(message["memory_id"]))
            await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%4417%'")
        before = len(api.requests)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
        assert rows(tmp_path / "replayed", "SELECT 1 FROM memories WHERE content LIKE '%dark roast%'")
        assert not rows(tmp_path / "replayed", "SELECT 1 FROM memories WHERE content LIKE '%4417%'")
        leaked = [t for t in _embedded_texts(api, before) if "4417-ORCHID" in t]
    assert leaked == [], f"the replay sent the erased message to the embedding model: {leaked}"
