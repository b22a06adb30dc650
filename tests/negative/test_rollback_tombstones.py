"""Found by a randomized replay check: rolling back a forget made with tombstones (`ALTM_RETENTION_TOMBSTONES`)
restored the memories and left the forget's tombstones of their own ids, so the write guard refused every
later version of what they stand for (the session's capsule, folded again at its next message, "matches
erased content")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

OLD = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def test_a_rolled_back_forget_leaves_no_tombstone_of_what_it_restored(settings: Settings,
                                                                           tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retention_tombstones": True})
    said = TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-t1", role=Role.USER, timestamp=OLD,
                     content="We decided to deploy the billing service on Tuesdays.")
    async with store_with(s, [said]) as (rt, app):
        await app.admin.retention(T0 + timedelta(days=1))
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM tombstones") != []
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-q1", "Which day do we deploy billing?", 800)
        await app.commit_turn(prepared.cycle_id, "On Tuesdays.")
        await rt.run_until_idle()
    kept = {r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM memories")}
    buried = {r["memory_id"] for r in rows(s.data_dir, "SELECT memory_id FROM tombstones")}
    assert kept and not kept & buried
    assert rows(s.data_dir, "SELECT reason FROM rejections") == []  # the capsule folded again is stored
    await replayed_equal(s, tmp_path / "replayed")
