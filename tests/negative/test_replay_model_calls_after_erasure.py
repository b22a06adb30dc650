"""After any erasure of a user, a replay calls the model again for everything of that user, and sends the erased
message itself to the model.

Finding: the README promises that model answers are "cached in the shard by (model, prompt hash), so a replay
costs no chat model calls" and that "with the workers' LLM cache it makes no model calls" (Kafka section), and
the project holds that nothing of an erased message reaches a model after its erasure
(``test_model_prompt_after_erasure.py``). But the writer's erase op always scrubs with ``all_cache=True``
(altm/pipeline/writer/ops/erasure.py:68), and ``_TxErasure.scrub`` (altm/store/_tx/_erasure.py:65-70) then deletes
*every* ``llm_cache`` row of the user's home, whatever was erased: one message, one session. ``replay_into``
copies the source's cache (altm/wiring/_replay.py:118-119), which no longer holds the answers for the user's other
sessions, so the replay asks the model again for each of them: calls a replay must not make (cost, rate limits,
and a model that answers differently the second time gives another state than the source's). Worse, an erasure
of one memory destroys no key (README, Crypto-shredding), so a replay from the log's start opens the erased
message again, stores it (its tombstone is carried pending until the replay meets the erasure again,
altm/wiring/_replay.py:122) and the extract stage, finding no cached answer (the erasure removed it), sends the
erased text to the remote model before the erasure is applied again.

Reproduction: an L2 model (the OpenAI double); two sessions of one user, each with a preference; erase session
s1 (or the s1 message by its memory id); replay the data dir into a fresh one with the same model configured
(``ALTM_L2_LLM_*``, as ``tests/integration/test_kafka_replay.py`` does) and count the chat requests made during
the replay.

Expected: no chat request during the replay (the answer for s2's message was in the source's cache before the
erasure, and s2 was not erased), and no chat request during the replay holds the erased message's text. An
erasure should remove only the cache entries whose prompt held erased content (e.g. record the memory ids or
sessions a cached prompt covered), and a replay should not call a model about a message whose erasure it
carries pending.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from altm.core import Settings
from altm.models import LLMSettings, ModelTask
from altm.wiring import replay_into
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import OpenAIDouble, openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "I prefer tabs over spaces in every Python file of the gate-code 4417 repo."
KEPT = "I prefer dark roast coffee in the morning before standup."


def _answer(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    atoms = [{"kind": "preference", "content": f"Stated preference: {text[:70]}"}] if "prefer" in text else []
    return json.dumps({"atoms": atoms})


async def _replay_after_erasure(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                api: OpenAIDouble, target: str) -> list[str]:
    """The source built with the L2 model, ``target`` ("session" or "memory") of s1 erased, then replayed with
    the same model configured: the user texts of the chat requests the replay made."""
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0, "retired_key_grace_s": 0.0})
    llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
    async with embedded(s, llm_settings=llm) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, ERASED, session="s1"), make_turn(2, KEPT, session="s2")])
        await rt.run_until_idle()
        assert len(api.chat_requests) == 2  # one extraction per message, both answered and cached
        if target == "session":
            await app.erase(SCOPE, "session", session_id="s1")
        else:
            (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id='s1'")
            await app.erase(SCOPE, "memory", memory_id=str(message["memory_id"]))
        await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%4417%'")
    before = len(api.chat_requests)
    for name, value in {"ALTM_L2_LLM_BASE_URL": api.base_url, "ALTM_L2_LLM_MODEL": "extractor",
                        "ALTM_L2_LLM_MAX_RETRIES": "0"}.items():
        monkeypatch.setenv(name, value)
    await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
    assert rows(tmp_path / "replayed", "SELECT 1 FROM memories WHERE content LIKE '%dark roast%'")  # s2 rebuilt
    return [m["content"] for r in api.chat_requests[before:] for m in r["body"]["messages"] if m["role"] == "user"]


@pytest.mark.parametrize("target", ["session", "memory"])
async def test_a_replay_after_an_erasure_makes_no_model_call(settings: Settings, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    with openai_double(_answer) as api:
        asked = await _replay_after_erasure(settings, tmp_path, monkeypatch, api, target)
    assert asked == [], f"the replay called the model {len(asked)} time(s): {asked}"


async def test_a_replay_never_sends_an_erased_message_to_the_model(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with openai_double(_answer) as api:
        asked = await _replay_after_erasure(settings, tmp_path, monkeypatch, api, "memory")
    leaked = [text for text in asked if "4417" in text]
    assert leaked == [], f"the erased message was sent to the model during the replay: {leaked}"
