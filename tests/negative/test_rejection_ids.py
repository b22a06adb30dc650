"""A reviewer's decision on a rejected proposal named it by the rejections table's row number (``rej_<n>``). The
decision is a control event on the log, and a replay numbers the rows as it makes them: when a capsule of the
session is refused a different number of times (a fold per message live, fewer in a replay), every later
rejection has another number there, and the replayed decision named no rejection at all (or another one). A
rejected proposal is named by its proposal now (``rej_<the proposal id's hex>``), the same in every replay."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.negative.test_capsule_refusal_versions import CODER, ERASED, REVIEWER
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import make_turn

# the capsule's first version is refused, the later ones are stored without that statement: live, a rejection
# is made and dropped again, which a replay (one fold) never makes
SESSION = ["Never use pickle for the session cache, it broke the last release.",
           "The staging cluster runs on Kubernetes 1.30 in Dublin.", "When is the release?", "Noted."]
LATER = "Never use pickle for the session cache, it broke the last release."  # another session's capsule, refused


async def test_a_review_of_a_rejection_decides_the_same_rejection_in_a_replay(settings: Settings,
                                                                              tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, ERASED, scope=CODER, session="s0")]) as (rt, app):
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        for i, text in enumerate(SESSION):  # one message at a time: a fold each (a replay: one)
            await rt.publish([make_turn(10 + i, text, scope=REVIEWER, session="s1")])
            await rt.run_until_idle()
        await rt.publish([make_turn(20, LATER, scope=REVIEWER, session="s2")])
        await rt.run_until_idle()
        (s2,) = rows(s.data_dir, "SELECT proposal_id FROM rejections WHERE payload LIKE '%\"session_id\":\"s2\"%'")
        (item,) = [r for r in app.review_queue(REVIEWER)["rejections"] if r["proposal_id"] == s2["proposal_id"]]
        await app.review_decide(REVIEWER, item["item_id"], "reject")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT review_status FROM rejections WHERE proposal_id=?",
                (s2["proposal_id"],)) == [{"review_status": "dismissed"}]
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_decision_about_a_rejection_an_erasure_removed_is_void(settings: Settings, tmp_path: Path) -> None:
    """The erasure of the agent whose proposal was refused removes the rejection; a decision that names it
    afterwards (or, in a replay, before, where the erased records no longer open and the rejection is never
    made) is void. Before, it was refused as naming no rejection, and its refusal waited in the review queue."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, ERASED, scope=CODER, session="s0")]) as (rt, app):
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        await rt.publish([make_turn(20, LATER, scope=REVIEWER, session="s2")])
        await rt.run_until_idle()
        (item,) = app.review_queue(REVIEWER)["rejections"][:1]
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM rejections")
        await app.review_decide(REVIEWER, item["item_id"], "reject")
        await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT reason FROM rejections"), "the decision about the erased rejection was refused"
    await replayed_equal(s, tmp_path / "replayed")
