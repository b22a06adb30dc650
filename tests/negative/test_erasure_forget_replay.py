"""Found by a randomized replay check: a session erased after a forget that covered it and another session.
The replay cannot open the erased session's records, so the memories of it the forget names never exist
there, and it refused the whole forget ("memory to forget … is not in this shard"): the other session's
memories stayed in the replay, forgotten in the source. The source's record of the forget also named the
erased memories (redacted in place, which a replay cannot rebuild)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from altm.core import FORGOTTEN_PREFIX, Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "We decided to deploy the billing service on Tuesdays.", session="s1"),
         make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2")]


@pytest.mark.parametrize("tombstones", [False, True], ids=["forget", "forget-with-tombstones"])
async def test_a_replay_after_erasing_a_session_a_forget_covered_forgets_the_rest(
        settings: Settings, tmp_path: Path, tombstones: bool) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": tombstones})
    async with store_with(s, TURNS) as (rt, app):
        assert await app.admin.retention(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=90)) > 0
        await rt.run_until_idle()
        forgotten = rows(s.data_dir, "SELECT DISTINCT target_id, json_extract(old_value, '$.session_id') AS s "
                                     "FROM audit_log WHERE action='forget' AND target_table='memories'")
        assert {r["s"] for r in forgotten} == {"s1", "s2"}  # one forget across both sessions
        assert rows(s.data_dir, "SELECT 1 FROM governance_events WHERE decision='forget'") != []
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    # the forget's record named erased memories: it goes (its part about them cannot be rebuilt)
    assert rows(s.data_dir, "SELECT 1 FROM governance_events WHERE decision='forget'") == []
    # every memory of s1 the forget reached has an erasure's tombstone (a replay counts it as gone)
    reasons = {str(r["memory_id"]): str(r["reason"]) for r in rows(s.data_dir, "SELECT memory_id, reason "
                                                                            "FROM tombstones")}
    for r in forgotten:
        if r["s"] == "s1":
            assert not reasons[str(r["target_id"])].startswith(FORGOTTEN_PREFIX)
    target_dir = await replayed_equal(s, tmp_path / "replayed")
    stored = {str(r["memory_id"]) for r in rows(target_dir, "SELECT memory_id FROM memories")}
    assert not stored & {str(r["target_id"]) for r in forgotten}  # s2's forgotten memories stay forgotten
