"""A model answer that validates must still be bounded like what the model-free path makes.

What a user expects (README, Models; Reliability: hostile input): answers are "validated against a JSON
schema", an invalid answer is deferred, and input is bounded when it is read (content up to
``ALTM_MAX_CONTENT_BYTES``, 64 KiB; free-form JSON 16 KiB or 64 KiB). The model-free fold keeps at most 8
items a section (``_SECTION_LIMIT``), and a message over 64 KiB is refused at input.

The schemas leave the free text of an answer unbounded:

* ``ExtractedAtom`` (altm/pipeline/processors/extract.py) bounds ``content`` (2,000 characters) but not
  ``subject``, ``pattern``, ``why_bad`` or ``better_alternative``, which ``_model_atoms`` copies into the atom's
  attributes; the writer's ``_validate`` (ops/memory.py) measures ``content`` only. A 4 MB ``why_bad`` is
  stored in the shard, on the proposals and changes logs, and quoted in every guard refusal and trust reason
  that names the anti-pattern.
* ``CapsuleSummary`` (altm/pipeline/processors/fold.py) bounds ``summary`` but not the number or length of its
  ``decisions``/``constraints``/``corrections``/``open_questions``: an answer with 2,000 decisions validates,
  is cached, and renders a capsule over 64 KiB that the writer refuses. The session then has no capsule at
  all (no extractive fallback, nothing deferred), and since the answer is cached every replay refuses it again.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import running
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import make_turn

LIMIT = 64 * 1024  # ALTM_MAX_CONTENT_BYTES's default


def _answer(body: dict[str, Any]) -> str | int:
    name = body["response_format"]["json_schema"]["name"]
    if name == "ExtractionResult":
        return json.dumps({"atoms": [{"kind": "anti_pattern", "content": "Deploying on Fridays is risky.",
                                      "pattern": "deploy on Fridays", "subject": "deploys",
                                      "why_bad": "rollbacks are slow " * 200_000}]})
    if name == "CapsuleSummary":
        return json.dumps({"summary": "The team planned the rollout.",
                           "decisions": [f"Decision number {i} about the rollout plan" for i in range(2000)]})
    return 400


async def _stored(settings: Settings, task: ModelTask) -> tuple[Settings, int]:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 3600.0})
    with openai_double(_answer) as api:
        llm = {task: LLMSettings(base_url=api.base_url, model="m", max_retries=0)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(1, "Never deploy on Fridays: we decided to ship on Tuesdays.")])
            await rt.run_until_idle()
            deferred = rt.work.count()
    assert api.chat_requests
    return s, deferred


async def test_a_model_atoms_attributes_are_bounded(settings: Settings) -> None:
    s, deferred = await _stored(settings, ModelTask.L2)
    sizes = [len(r["attributes"].encode()) for r in rows(s.data_dir, "SELECT attributes FROM memories "
                                                                      "WHERE layer='L2'")]
    assert all(size <= LIMIT for size in sizes) or (not sizes and deferred == 1), sizes


async def test_a_model_capsule_with_too_many_items_still_leaves_the_session_a_capsule(settings: Settings) -> None:
    s, deferred = await _stored(settings, ModelTask.L1)
    capsules = rows(s.data_dir, "SELECT method FROM memories WHERE layer='L1' AND session_id='s1'")
    refused = [r["reason"] for r in rows(s.data_dir, "SELECT reason FROM rejections")]
    assert capsules or deferred == 1, refused
