"""A forget of an anti-pattern lifts the holds it made (777ede0); three cases a review of that found, each a
test that fails on 777ede0: rolling the forget back put the scene's pre-forget row back whole, over a reviewer's
approval given since; it published two changes with one id for a memory the forget had changed twice (its
evidence repaired, then its hold lifted); and a scene whose evidence was all forgotten with the anti-pattern was
flagged ("its evidence was forgotten") still naming the anti-pattern as what it was judged by."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings, TurnEvent
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
SAID = [make_turn(1, "I decided to use pickle for the session cache with Marco.", session="s1"),
        make_turn(2, "I decided to review the session cache with Marco on Friday.", session="s2")]
OLD_ANTI = make_turn(3, ANTI, session="s3").model_copy(update={"timestamp": T0 - timedelta(days=30)})
SCENE = "SELECT memory_id, trust_status, trust_reason, trust_contradicting_id FROM memories WHERE layer='L3' " \
        "AND content LIKE 'Scene: Marco%'"


def _old(turns: list[TurnEvent]) -> list[TurnEvent]:
    return [t.model_copy(update={"timestamp": T0 - timedelta(days=30)}) for t in turns]


async def test_rollback_of_a_forget_keeps_a_later_review_of_the_scene_it_lifted(settings: Settings,
                                                                                tmp_path: Path) -> None:
    """The forget lifted the scene's hold; a reviewer then approved the scene. Rolling the forget back restores
    the audited pre-forget row whole: the reviewer's verdict is lost (the scene is held again for review)."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 10.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for batch in (SAID, [OLD_ANTI]):
            await rt.publish(batch)
            await rt.run_until_idle()
        (scene,) = rows(s.data_dir, SCENE)
        assert scene["trust_status"] == "uncertain"
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        await app.review_decide(SCOPE, scene["memory_id"], "approve")
        await rt.run_until_idle()
        assert [r["trust_status"] for r in rows(s.data_dir, SCENE)] == ["verified"]
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        after = rows(s.data_dir, SCENE)
    assert [r["trust_status"] for r in after] == ["verified"], after
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_forget_of_an_anti_pattern_and_of_the_scene_evidence_leaves_no_dangling_hold(
        settings: Settings) -> None:
    """Retention forgets the anti-pattern and every atom the held scene cites: _repair_evidence flags the scene
    ("its evidence was forgotten") without clearing trust_contradicting_id, and holds_lifted skips it (not
    held_by_guard any more): the scene still names the forgotten anti-pattern."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 10.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for batch in (_old(SAID), [OLD_ANTI]):
            await rt.publish(batch)
            await rt.run_until_idle()
        (anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
        (scene,) = rows(s.data_dir, SCENE)
        assert (scene["trust_status"], scene["trust_contradicting_id"]) == ("uncertain", anti["memory_id"])
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE memory_id=?", (anti["memory_id"],))
        after = rows(s.data_dir, SCENE)
    assert after, "scene forgotten too: scenario does not apply"
    assert all(r["trust_contradicting_id"] != anti["memory_id"] for r in after), after


async def test_rollback_of_a_forget_publishes_one_change_per_memory(settings: Settings) -> None:
    """The held scene cites an atom retention forgets with the anti-pattern: _repair_evidence and holds_lifted
    both update it (two audit rows of the forget). The rollback restores both audit rows (newest first) and
    puts each old value in also_changed: two ``committed`` changes with the same event id
    (derive_id("chg", rollback, "committed", memory_id)), the first carrying the intermediate, post-repair row."""
    from collections import Counter

    from altm.core import decode_event
    from altm.core.topics import Topic

    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 10.0})
    said = [SAID[0].model_copy(update={"timestamp": T0 - timedelta(days=30)}), SAID[1]]
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for batch in (said, [OLD_ANTI]):
            await rt.publish(batch)
            await rt.run_until_idle()
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        changes = await deployment.bus.read_all([f"{s.topic_prefix}{Topic.CHANGES.value}"])
    ids = Counter(decode_event(r.value).event_id for r in changes)
    assert {k: n for k, n in ids.items() if n > 1} == {}
