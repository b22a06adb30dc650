"""An approved value stays approved when a correction of it is approved and then rejected or erased.

"Our deploy day is Tuesday." (A) is approved. "Actually, the deploy day is Thursday now." (T) is held for
conflicting with it, and the reviewer approves T. A version of the fix of test_approved_correction contradicted A
at that point (as the reviewer's decision): a later rejection of T left A contradicted by a rejected memory, no
value current and nothing queued; an erasure of T's session cleared A's verdict (it named T), the approval lost,
while a replay (T never there) kept it: another state hash. A keeps its approval throughout now.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id, lc_state "
        "FROM memories WHERE layer='L2' ORDER BY valid_from")
SAID = "Our deploy day is Tuesday."


async def _approved_correction(s: Settings, deployment):  # type: ignore[no-untyped-def]
    rt, app = runtime_of(deployment), deployment.app
    await rt.publish([make_turn(1, SAID, session="s1")])
    await rt.run_until_idle()
    (a,) = rows(s.data_dir, _SQL)
    await app.review_decide(SCOPE, a["memory_id"], "approve")
    await rt.run_until_idle()
    await rt.publish([make_turn(2, "Actually, the deploy day is Thursday now.", session="s2")])
    await rt.run_until_idle()
    _, t = rows(s.data_dir, _SQL)
    assert t["trust_status"] == "uncertain", dict(t)
    await app.review_decide(SCOPE, t["memory_id"], "approve")
    await rt.run_until_idle()
    a, t = rows(s.data_dir, _SQL)
    assert (a["trust_status"], a["trust_method"]) == ("verified", "ground_truth"), dict(a)
    return a, t


async def test_rejecting_the_approved_correction_gives_the_earlier_approval_back(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        a, t = await _approved_correction(s, deployment)
        await app.review_decide(SCOPE, t["memory_id"], "reject", note="approved by mistake: still Tuesday")
        await rt.run_until_idle()
        a, t = rows(s.data_dir, _SQL)
        queued = {q["memory_id"] for q in app.review_queue(SCOPE)["memories"]}
    assert t["lc_state"] == "rejected", dict(t)
    # A is no longer contradicted by a rejected memory: approved again (or at least put back to review)
    assert a["trust_status"] != "contradicted" or a["memory_id"] in queued, dict(a)


async def test_erasing_the_approved_correction_keeps_the_earlier_approval(settings: Settings,
                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await _approved_correction(s, deployment)
        await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
        (a,) = rows(s.data_dir, _SQL)
    assert (a["trust_status"], a["trust_method"]) == ("verified", "ground_truth"), dict(a)
    await replayed_equal(s, tmp_path / "replayed")
