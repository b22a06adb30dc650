"""Found by a review (a user erasure after a forget): an erasure left the records about what it erased that a
replay cannot rebuild, because their records on the log no longer open: the erased memories' lifecycle
signals, the erased owner's runtime cycles (with the ids of the memories a turn was given), and the user's
governance events and held actions. The source kept them, a replay had none: another state hash, and rows
about an erased user left in the shard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "We decided to deploy the billing service on Tuesdays.", session="s1"),
         make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2")]


@pytest.mark.parametrize("target", ["user", "session"])
async def test_a_replay_after_an_erasure_rebuilds_the_same_state(settings: Settings, tmp_path: Path,
                                                                 target: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s2", "s2-t9", "Where does staging run?", 800)
        await app.commit_turn(prepared.cycle_id, "In Dublin.")
        await rt.run_until_idle()
        if target == "user":  # a forget first: its governance events are the user's
            assert await app.admin.retention(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)) > 0
            await rt.run_until_idle()
            await app.erase(SCOPE, "user")
        else:
            await app.erase(SCOPE, "session", session_id="s2")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM runtime_cycles WHERE session_id='s2'") == []
    kept = {str(r["memory_id"]) for r in rows(s.data_dir, "SELECT memory_id FROM memories")}
    assert {str(r["memory_id"]) for r in rows(s.data_dir, "SELECT memory_id FROM lifecycle_signals")} <= kept
    if target == "user":
        assert rows(s.data_dir, "SELECT 1 FROM governance_events") == []
    await replayed_equal(s, tmp_path / "replayed")
