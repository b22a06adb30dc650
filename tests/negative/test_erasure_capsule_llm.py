"""From the review of capsule statements: the model path of fold (``_summarised``) wrote the model's summary and
items as they came, and a line break in them made lines the statement reader was not written for: a line
whose first ": " is no section title had its part before ": " taken for a title (never judged), and an item
with a line break was two statements of the text but one item of ``attributes.sections``. Items and summary
are written on one line now (``altm.core.capsule.flat``), and only the capsule's own titles are titles."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = "My sister Maya is moving to Leeds for a nursing job in the spring."


def _answer(summary: str, decisions: list[str]) -> Callable[[dict[str, Any]], str | int]:
    def answer(body: dict[str, Any]) -> str | int:
        if body["response_format"]["json_schema"]["name"] != "CapsuleSummary":
            return 400
        return json.dumps({"summary": summary, "decisions": decisions, "constraints": [], "corrections": [],
                           "open_questions": []})
    return answer


async def _capsule_of_s2(settings: Settings, summary: str, decisions: list[str]) -> dict[str, Any]:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_answer(summary, decisions)) as api:
        llm = {ModelTask.L1: LLMSettings(base_url=api.base_url, model="summariser", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, ERASED, session="s1")])
            await rt.run_until_idle()
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            await rt.publish([make_turn(2, "We decided to meet at the museum on Friday morning.", session="s2"),
                              make_turn(3, "Maya got that nursing job in Leeds, she moves in spring.",
                                        session="s2")])
            await rt.run_until_idle()
    (capsule,) = rows(s.data_dir, "SELECT content, attributes FROM memories WHERE layer='L1' AND session_id='s2'")
    return capsule


async def test_erased_content_before_a_colon_in_a_summary_line_is_judged(settings: Settings) -> None:
    capsule = await _capsule_of_s2(
        settings, "They planned a museum visit.\nMaya is moving to Leeds for a nursing job: the family visits soon.",
        ["Meet at the museum on Friday morning"])
    assert "Leeds" not in capsule["content"], capsule["content"]


async def test_an_item_with_a_newline_leaves_its_re_stating_half_out_of_the_sections(settings: Settings) -> None:
    capsule = await _capsule_of_s2(
        settings, "They planned a museum visit.",
        ["Meet at the museum on Friday morning.\nMaya has a nursing job in Leeds now."])
    assert "Leeds" not in capsule["content"], capsule["content"]  # holds: the line is left out of the text
    assert "Leeds" not in capsule["attributes"], capsule["attributes"]
