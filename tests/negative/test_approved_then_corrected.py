"""An approved memory the user later explicitly corrects: the conflict reaches no one.

A reviewer approves "Our deploy day is Tuesday." (ground truth). Later the user says "Actually, the deploy day is
Thursday now." Since 180fcdd verify gives the approved atom no verdict (good: an automatic cue-word heuristic
should not silently overturn a human decision), but the correction itself is judged as if the approval were an
ordinary earlier value: ``verified``, "replaces an earlier value ... stated as a correction", naming the approved
atom as what it replaces. The result is two current, mutually exclusive facts that are both ``verified`` (both
boosted ×1.1 at recall, neither flagged) and an empty review queue: the agent is told the deploy day is Tuesday
*and* Thursday with equal authority, and the reviewer whose approval is now in question is never asked. Before
180fcdd the correction marked the approved atom contradicted (queued); without the approval it is contradicted
and queued. A conflict with a reviewer's verdict is exactly what the review queue is for: the correction should
be held (uncertain, naming the approved atom) for review, or the approval's validity closed by it.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id FROM memories "
        "WHERE layer='L2' ORDER BY valid_from")


async def test_a_correction_of_an_approved_memory_is_put_to_review(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "Our deploy day is Tuesday.", session="s1")])
        await rt.run_until_idle()
        (approved,) = rows(s.data_dir, _SQL)
        await app.review_decide(SCOPE, approved["memory_id"], "approve")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "Actually, the deploy day is Thursday now.", session="s2")])
        await rt.run_until_idle()
        tuesday, thursday = rows(s.data_dir, _SQL)
        current = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L2")}
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert (tuesday["trust_status"], tuesday["trust_method"]) == ("verified", "ground_truth")  # the approval stands
    both_current_and_verified = ({tuesday["memory_id"], thursday["memory_id"]} <= current
                                 and tuesday["trust_status"] == thursday["trust_status"] == "verified")
    assert queued & {tuesday["memory_id"], thursday["memory_id"]} or not both_current_and_verified, (
        "two conflicting current facts, both verified, nothing in the review queue", dict(thursday))
