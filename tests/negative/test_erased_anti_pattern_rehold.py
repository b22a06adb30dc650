"""Erasing an anti-pattern a reviewer-approved capsule was held for puts the capsule back to review for the
anti-pattern the reviewer already approved it past, and a replay keeps the approval.

"I decided to use pickle for the session cache." (session s1) is held for the pickle anti-pattern (s2); a reviewer
approves the capsule ("trusted data only"): the approval covers the pickle anti-pattern (f25c6aa). An eval
anti-pattern is said in s3, then s1 goes on with "I decided to use eval ...": the capsule is rightly held again,
for the eval one. The user then erases s3. ``_verdicts_kept`` clears the hold and calls ``held_again``, which
judges the capsule against every stored anti-pattern with no regard to the approval: it is held for the pickle
anti-pattern again, back in the review queue and weighed down at recall, though the reviewer approved exactly that.
Worse, ``redact_audit_reasons`` has hashed the trust reason of the approval's audit row, which is what
``approved_holds`` reads to know what the approval covered ("write guard: ..."): the coverage is lost for good,
so every later fold of s1 holds it again too. A replay of the log, in which the eval anti-pattern never exists,
keeps the capsule approved: the state hash differs. (The replay compares the capsule only: the whole state
differs for another reason too, the eval decision atom, see the report.)
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from altm.wiring import replay_into
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

_CAPSULE = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id "
            "FROM memories WHERE kind='capsule' AND session_id='s1'")
PICKLE_ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
EVAL_ANTI = "Never use eval to parse the config file because it runs arbitrary code."


async def test_erasing_another_anti_pattern_keeps_the_approval(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        await say(rt, 1, "I decided to use pickle for the session cache.", "s1")
        await say(rt, 2, PICKLE_ANTI, "s2")
        (held,) = rows(s.data_dir, _CAPSULE)
        assert held["trust_status"] == "uncertain", dict(held)
        await app.review_decide(SCOPE, held["memory_id"], "approve", note="pickle is fine here: trusted data only")
        await rt.run_until_idle()
        await say(rt, 3, EVAL_ANTI, "s3")
        await say(rt, 4, "I decided to use eval to parse the config file.", "s1")
        (eval_anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern' AND content=?",
                            (EVAL_ANTI,))
        (capsule,) = rows(s.data_dir, _CAPSULE)
        assert capsule["trust_contradicting_id"] == eval_anti["memory_id"], dict(capsule)  # rightly held for eval
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
        (capsule,) = rows(s.data_dir, _CAPSULE)
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    # only the approved pickle anti-pattern is left: the approval stands, as in a log without the eval one
    assert (capsule["trust_status"], capsule["trust_method"]) == ("verified", "ground_truth"), (
        capsule["trust_status"], capsule["trust_reason"])
    assert capsule["memory_id"] not in queued
    await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
    (replayed,) = rows(tmp_path / "replayed", _CAPSULE)
    assert dict(replayed) == dict(capsule)
