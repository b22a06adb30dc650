"""An approved capsule is held for review again on every fold of its session, for the same anti-pattern the
reviewer already approved it for.

b5286a2 makes an approval cover only "the version it was given for": any later capsule version with another
content hash that the guard flags is held again. But a capsule's content changes with every batch of its
session (it is re-folded after each), and the guard flags every version for the anti-pattern the approved
version was held for (the pickle decision is still in the session). So after "pickle is fine here", the next
unrelated message of the session ("The standup is at nine.") puts the capsule back to ``uncertain`` naming the
pickle anti-pattern: out of recall's boost, weighed down, back in the review queue. The reviewer approves it
again, the session goes on, and it is back again: the approval never sticks while the session is alive. A
version that re-asserts nothing the approved version did not should keep the approval; only an anti-pattern the
approved version was not judged against (test_approval_carried_to_new_capsule) should hold it again.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

_CAPSULE = ("SELECT memory_id, content, content_hash, trust_status, trust_method, trust_reason, "
            "trust_contradicting_id FROM memories WHERE kind='capsule' AND session_id='s1'")


async def test_an_approved_capsule_is_not_held_again_for_what_it_was_approved_for(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        await say(rt, 1, "I decided to use pickle for the session cache.", "s1")
        await say(rt, 2, "Never use pickle for the session cache because unpickling untrusted data runs code.", "s2")
        (held,) = rows(s.data_dir, _CAPSULE)
        assert held["trust_status"] == "uncertain", held  # held for the pickle anti-pattern
        await app.review_decide(SCOPE, held["memory_id"], "approve", note="pickle is fine here: trusted data only")
        await rt.run_until_idle()
        (approved,) = rows(s.data_dir, _CAPSULE)
        assert (approved["trust_status"], approved["trust_method"]) == ("verified", "ground_truth")
        await say(rt, 3, "I decided to use Redis for the job queue.", "s1")  # the session goes on: nothing new flagged
        (capsule,) = rows(s.data_dir, _CAPSULE)
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert capsule["content_hash"] != approved["content_hash"], "the capsule was re-folded"
    # nothing in the new version but what the reviewer approved is flagged: the approval stands
    assert (capsule["trust_status"], capsule["trust_method"]) == ("verified", "ground_truth"), (
        capsule["trust_status"], capsule["trust_reason"])
    assert capsule["memory_id"] not in queued
