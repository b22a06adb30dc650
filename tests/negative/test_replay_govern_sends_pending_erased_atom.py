"""Finding: a replay sends a message erased by its id to the governance model: the earlier facet version that
govern compares a later statement with (OLD) is read from an atom whose erasure the replay carries pending, and
govern checks only the new atom.

e691c12 made the stages send no model a memory whose erasure is pending (a replay that has not reached the
erasure yet). ``GovernProcessor._atom`` (altm/pipeline/processors/govern.py:139-142) checks
``erasure_pending(mem.scope, [mem.memory_id, *mem.evidence])`` — the atom being governed and its message only.
``_facet`` then takes every atom of the facet key (altm/pipeline/processors/govern.py:184), builds ``previous``
from the latest earlier one (line 195) and ``_should_supersede`` sends ``OLD: {old.content}`` to the governance
model (lines 216-223) without asking whether ``previous``'s atom (or its message) is about to be erased. With the
rules extracting (no L2 model), the erased message's atom is made again in the replay: an erasure by memory id
destroys no key, its tombstones are carried pending (altm/wiring/_replay.py:85-86) and refuse nothing until the
replay reaches the erasure; the source's cached answer for that prompt went with the erasure (its ``sources``
name the erased atom), so the replay asks the model again, erased text included.

Reproduction: a governance model only (the OpenAI double answering ``SupersedeRubric``); s1: "I like tabs for
indentation, gate 4417."; s2: "I like spaces for indentation." (same facet key ``preference:indentation``);
erase the s1 message by its memory id; ``replay_into`` a fresh data dir with the same governance model
configured; read the chat requests the replay made.

Expected: no chat request of the replay holds the erased message's text ("4417"): an atom whose erasure (or
whose message's erasure) is pending is left out of the facet versions govern compares with a model, as it is for
the atom governed (e.g. ``earlier`` skips atoms for which ``erasure_pending`` holds, or the comparison falls back
to the rules for it).
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
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "I like tabs for indentation, gate 4417."
LATER = "I like spaces for indentation."


def _answer(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "SupersedeRubric":
        return 400
    return json.dumps({"supersede": True, "confidence": 0.9, "reason": "the value changed"})


async def test_a_replay_sends_no_pending_erased_atom_to_the_governance_model(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0, "retired_key_grace_s": 0.0})
    with openai_double(_answer) as api:
        llm = {ModelTask.GOVERNANCE: LLMSettings(base_url=api.base_url, model="governor", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, ERASED, session="s1")])
            await rt.run_until_idle()
            await rt.publish([make_turn(2, LATER, session="s2")])
            await rt.run_until_idle()
            assert any("4417" in text for text in api.user_texts()), "the source never asked the governance model"
            (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id='s1'")
            await app.erase(SCOPE, "memory", memory_id=str(message["memory_id"]))
            await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%4417%'")
        before = len(api.chat_requests)
        for name, value in {"ALTM_GOVERNANCE_LLM_BASE_URL": api.base_url, "ALTM_GOVERNANCE_LLM_MODEL": "governor",
                            "ALTM_GOVERNANCE_LLM_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(name, value)
        await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
        asked = [m["content"] for r in api.chat_requests[before:] for m in r["body"]["messages"]
                 if m["role"] == "user"]
    assert rows(tmp_path / "replayed", "SELECT 1 FROM memories WHERE content = ?", (LATER,))  # s2 rebuilt
    assert not rows(tmp_path / "replayed", "SELECT 1 FROM memories WHERE content LIKE '%4417%'")  # erased again
    leaked = [text for text in asked if "4417" in text]
    assert leaked == [], f"the replay sent the message erased by id to the governance model: {leaked}"
