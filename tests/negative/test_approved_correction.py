"""A restatement of a correction a reviewer approved over an earlier approved value is verified by it.

"Our deploy day is Tuesday." (A) is approved. "Actually, the deploy day is Thursday now." (T) conflicts with it:
T is ``uncertain`` and queued ("conflicts with a reviewer-approved memory"). The reviewer approves T. Then "Yes,
the deploy day is Thursday." (R) was held against A again and queued, every restatement costing the reviewer a
decision (d50cc14). Verify now holds a statement only against approvals no later approval conflicts with, and R
agrees with T: verified. A keeps its approval: a reviewer's verdict is changed only by a review (approving T did
not reject A; a review of A does). A version of this fix that contradicted A when T was approved lost A's
approval for good when T was later erased, and a replay (where T never was) kept it: the state differed.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

_SQL = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id FROM memories "
        "WHERE layer='L2' ORDER BY valid_from")


async def test_a_restatement_of_an_approved_correction_is_not_put_to_review(settings: Settings,
                                                                           tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        await say(rt, 1, "Our deploy day is Tuesday.", "s1")
        (a,) = rows(s.data_dir, _SQL)
        await app.review_decide(SCOPE, a["memory_id"], "approve")
        await rt.run_until_idle()
        await say(rt, 2, "Actually, the deploy day is Thursday now.", "s2")
        _, t = rows(s.data_dir, _SQL)
        assert t["trust_status"] == "uncertain", t  # put to review: good
        await app.review_decide(SCOPE, t["memory_id"], "approve", note="we moved it")
        await rt.run_until_idle()
        await say(rt, 3, "Yes, the deploy day is Thursday.", "s3")
        tuesday, thursday, again = rows(s.data_dir, _SQL)
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert again["trust_status"] == "verified" and again["memory_id"] not in queued, dict(again)
    assert (tuesday["trust_method"], thursday["trust_method"]) == ("ground_truth", "ground_truth")
    await replayed_equal(s, tmp_path / "replayed")
