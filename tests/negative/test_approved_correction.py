"""A reviewer who approves a correction of an approved fact gets two approved, conflicting current facts, and
every later statement of the corrected value is put to review again.

"Our deploy day is Tuesday." (A) is approved. The user says "Actually, the deploy day is Thursday now." (T): since
5d24fb6 T is ``uncertain`` ("conflicts with a reviewer-approved memory ...: needs review") and queued: good. The
reviewer approves T (the correction is right). Now:

* A stays ``verified`` by ground truth and current (verify gives a reviewed atom no verdict, set_trust keeps it):
  recall boosts both "Tuesday" and "Thursday" as reviewer-verified, and nothing is queued to resolve it;
* the user says "Yes, the deploy day is Thursday." (R), agreeing with the approved T: ``cross_verify`` looks only
  at the *earlier approved* atoms R conflicts with (A) and ignores that a later approval (T) overtook A, so R is
  ``uncertain``, "needs review", and back in the queue. Each re-statement of the approved correction costs the
  reviewer another decision, and R never counts as support.

An approved atom that a later approved atom conflicts with should no longer outrank statements (R is verified by
T's support), and the two conflicting approvals should be resolved (A contradicted/closed by T, or queued).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id FROM memories "
        "WHERE layer='L2' ORDER BY valid_from")


async def test_a_restatement_of_an_approved_correction_is_not_put_to_review(settings: Settings,
                                                                           tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app

        async def say(i: int, text: str, session: str) -> None:
            await rt.publish([make_turn(i, text, session=session)])
            await rt.run_until_idle()

        await say(1, "Our deploy day is Tuesday.", "s1")
        (a,) = rows(s.data_dir, _SQL)
        await app.review_decide(SCOPE, a["memory_id"], "approve")
        await rt.run_until_idle()
        await say(2, "Actually, the deploy day is Thursday now.", "s2")
        _, t = rows(s.data_dir, _SQL)
        assert t["trust_status"] == "uncertain", t  # put to review: good
        await app.review_decide(SCOPE, t["memory_id"], "approve", note="we moved it")
        await rt.run_until_idle()
        await say(3, "Yes, the deploy day is Thursday.", "s3")
        tuesday, thursday, again = rows(s.data_dir, _SQL)
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert again["trust_status"] == "verified" and again["memory_id"] not in queued, dict(again)
    assert not (tuesday["trust_status"] == thursday["trust_status"] == "verified"
                and not queued & {tuesday["memory_id"], thursday["memory_id"]}), (dict(tuesday), dict(thursday))
    await replayed_equal(s, tmp_path / "replayed")
