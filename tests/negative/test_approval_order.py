"""Whether an approved capsule's later version is held for an anti-pattern depends on whether the anti-pattern
was stored before or after that version.

b5286a2 holds a later version of an approved capsule that the guard flags when it is written
(``upsert_memory``). When the anti-pattern is stored *after* the version that re-asserts it,
``summaries_judged_again`` judges the capsule again, but ``_held_for_review`` keeps "a verdict already given",
and the carried-over approval (given for the pickle version) is one: the capsule that now recommends eval stays
``verified`` by ground truth, boosted at recall and out of the review queue. The same statements with the eval
anti-pattern said first hold it (test_approval_carried_to_new_capsule). Which of fold and extract/govern reaches
the writer first depends on batching (a replay's can differ), so the stored verdict depends on arrival order.
(Here the pickle anti-pattern is rejected after the approval, so the intermediate versions are flagged for
nothing and keep the approval; with it still stored, every version is held again anyway:
test_approved_capsule_churn.)
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

_CAPSULE = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id "
            "FROM memories WHERE kind='capsule' AND session_id='s1'")
EVAL_ANTI = "Never use eval to parse the config file because it runs arbitrary code."
EVAL_USE = "I decided to use eval to parse the config file."


@pytest.mark.parametrize("anti_first", [True, False], ids=["anti-pattern-first", "anti-pattern-after"])
async def test_an_approved_capsules_new_version_is_held_whatever_the_order(settings: Settings,
                                                                          anti_first: bool) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        await say(rt, 1, "I decided to use pickle for the session cache.", "s1")
        await say(rt, 2, "Never use pickle for the session cache because unpickling untrusted data runs code.", "s2")
        (held,) = rows(s.data_dir, _CAPSULE)
        assert held["trust_status"] == "uncertain", held
        await app.review_decide(SCOPE, held["memory_id"], "approve", note="pickle is fine here: trusted data only")
        await rt.run_until_idle()
        # ...and the pickle rule itself goes (rejected): later versions of the capsule are flagged for nothing
        (pickle_anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
        await app.review_decide(SCOPE, pickle_anti["memory_id"], "reject", note="too broad")
        await rt.run_until_idle()
        if anti_first:
            await say(rt, 3, EVAL_ANTI, "s3")
            await say(rt, 4, EVAL_USE, "s1")
        else:
            await say(rt, 3, EVAL_USE, "s1")  # the capsule recommends eval, nothing forbids it yet
            await say(rt, 4, EVAL_ANTI, "s3")  # now something does: the agent's capsules are judged again
        (capsule,) = rows(s.data_dir, _CAPSULE)
        (eval_anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern' AND content=?",
                            (EVAL_ANTI,))
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert "use eval to parse the config file" in capsule["content"]
    assert (capsule["trust_status"], capsule["trust_contradicting_id"]) == ("uncertain", eval_anti["memory_id"]), \
        dict(capsule)
    assert capsule["memory_id"] in queued
