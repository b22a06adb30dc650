"""An anti-pattern that retention forgot no longer counts: the guard's lookup reads stored anti-patterns only,
so a decision re-asserting it is stored from then on, and what it held for review must be judged again
without it, as when a reviewer rejects it or it is erased. Before, a scene it held stayed held (naming a
memory that no longer exists) until something made govern compute the scene again."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
SAID = [make_turn(1, "I decided to use pickle for the session cache with Marco.", session="s1"),
        make_turn(2, "I decided to review the session cache with Marco on Friday.", session="s2")]
OLD_ANTI = make_turn(3, ANTI, session="s3").model_copy(update={"timestamp": T0 - timedelta(days=30)})
FRIDAY = "Never review the session cache on Friday because the deploy freeze blocks reviews."
SCENE = "SELECT trust_status, trust_reason, trust_contradicting_id FROM memories WHERE layer='L3' " \
        "AND content LIKE 'Scene: Marco%'"


async def _held_then_forgotten(s: Settings, *, second: str | None = None) -> None:
    """The scene held for the old anti-pattern, then retention past it (and past nothing else of layer L2)."""
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        extra = [make_turn(5, second, session="s5").model_copy(update={"timestamp": T0 + timedelta(days=20)})] \
            if second is not None else []
        for batch in (SAID, [OLD_ANTI, *extra]):
            await rt.publish(batch)
            await rt.run_until_idle()
        (old,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern' AND content=?", (ANTI,))
        assert [(r["trust_status"], r["trust_contradicting_id"]) for r in rows(s.data_dir, SCENE)] == [
            ("uncertain", old["memory_id"])]
        forgotten = await deployment.app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        assert forgotten >= 1
        assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE kind='anti_pattern' AND content LIKE '%pickle%'")


async def test_a_forgotten_anti_pattern_holds_nothing(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 10.0})
    await _held_then_forgotten(s)
    scene = rows(s.data_dir, SCENE)
    assert [r["trust_status"] for r in scene] == ["unverified"], scene
    assert scene[0]["trust_contradicting_id"] is None


async def test_a_scene_held_for_another_anti_pattern_stays_held_for_that_one(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 10.0})
    await _held_then_forgotten(s, second=FRIDAY)
    (scene,) = rows(s.data_dir, SCENE)
    assert scene["trust_status"] == "uncertain", scene
    (kept,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
    assert scene["trust_contradicting_id"] == kept["memory_id"]
