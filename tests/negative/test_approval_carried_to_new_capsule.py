"""A reviewer's approval of one version of a session capsule is carried over to every later version of it, so
the write guard never holds the capsule again, whatever the session goes on to say.

A capsule's id is its session's (``capsule_id_parts``): it is re-folded, with new content, after each batch of
the session's messages. Session s1 says "I decided to use pickle for the session cache."; an anti-pattern
against pickle holds its capsule for review; the reviewer approves it ("pickle is fine here: trusted data
only"). Later in s1 the user says "I decided to use eval to parse the config file." while an anti-pattern
"Never use eval to parse the config file ..." is stored. The guard refuses the atom, and flags the new capsule
version, but ``upsert_memory`` carries the approval over (``_KEPT_ON_UPDATE``) and ``_held_for_review`` keeps
"a verdict already given": the capsule, now recommending eval, is stored ``verified`` by ground truth with the
reviewer's note about pickle, out of the review queue and boosted at recall. Without the earlier approval the
same capsule is held for the eval anti-pattern. (The same holds for a scene, whose id is its anchor's, and for an
anti-pattern stored after the approval: ``summaries_judged_again`` also skips a verified row.)
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

_CAPSULE = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id "
            "FROM memories WHERE kind='capsule' AND session_id='s1'")
EVAL_ANTI = "Never use eval to parse the config file because it runs arbitrary code."


async def test_a_new_capsule_version_is_held_for_an_anti_pattern_its_approved_version_did_not_assert(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        await say(rt, 1, "I decided to use pickle for the session cache.", "s1")
        await say(rt, 2, "Never use pickle for the session cache because unpickling untrusted data runs code.", "s2")
        await say(rt, 3, EVAL_ANTI, "s3")
        (held,) = rows(s.data_dir, _CAPSULE)
        assert held["trust_status"] == "uncertain", held  # held for the pickle anti-pattern
        await app.review_decide(SCOPE, held["memory_id"], "approve", note="pickle is fine here: trusted data only")
        await rt.run_until_idle()
        await say(rt, 4, "I decided to use eval to parse the config file.", "s1")  # the same session goes on
        (capsule,) = rows(s.data_dir, _CAPSULE)
        (eval_anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern' AND content=?",
                            (EVAL_ANTI,))
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert capsule["memory_id"] == held["memory_id"] and "use eval to parse the config file" in capsule["content"]
    # the approval was of a version that did not say this: the new version is held for the eval anti-pattern
    assert (capsule["trust_status"], capsule["trust_contradicting_id"]) == ("uncertain", eval_anti["memory_id"]), \
        capsule
    assert capsule["memory_id"] in queued
