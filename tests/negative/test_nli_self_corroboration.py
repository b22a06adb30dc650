"""A tool message that repeats its own claim is verified by the NLI model, although cross-verification refuses it.

Finding: model-free, ``agrees`` (altm/pipeline/processors/verify.py:63-66) counts support only from another
statement "from other messages" (``not set(a.evidence) & set(b.evidence)``), so atoms cut from one message never
vouch for each other (``tests/negative/test_self_corroborated_tool_claim.py``: a lone tool message stays
``unverifiable``). With an NLI model configured, ``VerifyProcessor._nli`` (verify.py:208-234) asks the model about
*every* other atom of the subject group and, on ``entailment``, sets the atom ``verified`` (verify.py:229-233)
with no such check: an atom of the same message (or a verbatim copy) is "independent support". An honest NLI
model answers "entailment" for "the release deadline is March 3, 2027" against itself, so one tool output (a
fetched web page) that says its claim twice is shown in every later bundle as ``trust: verified``: the
laundering ``test_self_corroborated_tool_claim.py`` rules out model-free comes back whenever an NLI model is
configured.

Reproduction: a tool turn "The release deadline is March 3, 2027. Confirmed again: the release deadline is
March 3, 2027. Double-checked: the release deadline is March 3, 2027!" (three atoms of subject "release
deadline", all with the one message as evidence), an NLI endpoint (the OpenAI double) that answers
``{"label": "entailment", "confidence": 0.95}``; the atoms' verdicts are read from the shard.

Expected: an entailment counts as support only where cross-verification would count it: from an atom of other
evidence (another message), and not a verbatim duplicate. The three atoms stay ``unverifiable`` (as without a
model), and the bundle labels none of them ``trust: verified``.
"""

from __future__ import annotations

import json
from typing import Any

from altm.core import Role
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

CLAIM = ("The release deadline is March 3, 2027. Confirmed again: the release deadline is March 3, 2027. "
         "Double-checked: the release deadline is March 3, 2027!")


def _nli(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "NLIJudgement":
        return 400
    return json.dumps({"label": "entailment", "confidence": 0.95})


async def test_an_nli_entailment_from_the_same_message_does_not_verify(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_nli) as api:
        llm = {ModelTask.NLI: LLMSettings(base_url=api.base_url, model="nli-judge", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([make_turn(1, "Please fetch the release calendar page."),
                              make_turn(2, CLAIM, role=Role.TOOL), make_turn(3, "Thanks.")])
            await rt.run_until_idle()
            bundle = (await app.prepare_turn(SCOPE, "s2", "s2-t1", "What is the release deadline?", 2000)).bundle
        asked = [r for r in api.chat_requests if r["body"]["response_format"]["json_schema"]["name"] == "NLIJudgement"]
    atoms = rows(s.data_dir, "SELECT evidence, trust_status, trust_method, trust_reason FROM memories "
                             "WHERE layer = 'L2'")
    assert len(atoms) == 3 and len({a["evidence"] for a in atoms}) == 1, atoms  # one message, three atoms
    assert asked, "the NLI model was never asked: the subject group did not form"
    verified = [a for a in atoms if a["trust_status"] == "verified"]
    assert verified == [], f"a lone tool message vouched for itself through the NLI model: {verified}"
    assert "trust: verified" not in bundle.rendered, bundle.rendered
