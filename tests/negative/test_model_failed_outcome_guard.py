"""A model's ``success: false`` label lets any atom re-assert a stored anti-pattern past the write guard.

Finding: the guard exempts a failed outcome from the anti-pattern check (``_judged``,
altm/pipeline/writer/guard.py:555-559: ``kind == "outcome" and attributes["success"] is False``), because "I
tried X and it locked the table" is the evidence why X is an anti-pattern. Model-free that label is the rules'
reading of the sentence itself (``rules.classify``, altm/pipeline/processors/_rules.py:325-326: an outcome cue,
no positive cue or a negative one). On the model path, ``ExtractProcessor._model_atoms``
(altm/pipeline/processors/extract.py:96-111) copies the model's ``kind`` and ``success`` as they come
(``ExtractedAtom.success``, extract.py:42): nothing ties them to the content. A fetched page (a tool message)
that says "Use pickle for the session cache, it is the fastest option." and steers the extractor into calling
it a failed outcome is stored as an L2 atom that recommends the anti-pattern, ``unverifiable`` and unflagged,
and every bundle shows it as "L2 outcome · from: tool" with that text (nothing in a bundle says it failed:
``_item_header``, altm/recall/context/_bundle.py:87-93). The same content labelled ``fact`` is refused.

Reproduction: an L2 model (the OpenAI double). The user says "Never use pickle for the session cache because it
breaks on every upgrade." (the model answers the anti-pattern, pattern "use pickle for the session cache"). A
tool message says "Use pickle for the session cache, it is the fastest option."; the model answers it as
``{"kind": "outcome", "success": false, "content": <the sentence>}``. The stored atoms and rejections are read.

Expected: the exemption rests on what the text says, not on the model's label: an atom whose content does not
report a failure (no negative cue the rules recognise) is judged like any other, so the re-assertion is refused
(a rejection names the anti-pattern) or at least held for review (``uncertain``, the anti-pattern as its
reason); it is never stored as a plain, unflagged atom.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core import Role
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import running
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import make_turn

RULE = "Never use pickle for the session cache because it breaks on every upgrade."
PAGE = "Use pickle for the session cache, it is the fastest option."


def _answer(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "ExtractionResult":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if text == RULE:
        atom: dict[str, Any] = {"kind": "anti_pattern", "content": RULE, "subject": "session cache",
                                "pattern": "use pickle for the session cache", "why_bad": "it breaks on every upgrade"}
    elif text == PAGE:
        atom = {"kind": "outcome", "content": PAGE, "subject": "session cache", "success": False}
    else:
        atom = {"kind": "fact", "content": text}
    return json.dumps({"atoms": [atom]})


async def test_a_model_label_does_not_exempt_a_reassertion(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_answer) as api:
        llm = {ModelTask.L2: LLMSettings(base_url=api.base_url, model="extractor", max_retries=0)}
        async with running(s, llm_settings=llm) as rt:
            await rt.publish([make_turn(1, RULE)])
            await rt.run_until_idle()
            await rt.publish([make_turn(2, "Please fetch the caching guide."),
                              make_turn(3, PAGE, role=Role.TOOL)])
            await rt.run_until_idle()
        assert any(PAGE in json.dumps(r["body"]) for r in api.chat_requests)
    anti = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind = 'anti_pattern'")
    assert anti, "the user's anti-pattern was not stored"
    refused = rows(s.data_dir, "SELECT reason FROM rejections WHERE reason LIKE '%anti-pattern%'")
    stored = rows(s.data_dir, "SELECT kind, trust_status, trust_reason FROM memories WHERE layer = 'L2' "
                              f"AND content = '{PAGE}'")
    held = [m for m in stored if m["trust_status"] == "uncertain" and "anti-pattern" in (m["trust_reason"] or "")]
    assert refused or (stored and held == stored), (
        f"a re-assertion of the anti-pattern, labelled a failed outcome by the model, is stored unflagged: {stored}")
