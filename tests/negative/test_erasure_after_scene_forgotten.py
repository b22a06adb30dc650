"""A scene retention forgot, then the erasure of a session it was made from: the replay differs.

Marco is named in s1 (day 0) and s2 (day 50): one scene "Marco — 2 memories across sessions s1, s2" (L3, no
session of its own, valid from day 0). ``ALTM_RETENTION_DAYS_L3=30``: a retention pass at day 60 forgets the
scene. Then the user erases session s1. README (Trust and erasure): "An erasure also reaches what retention
forgot of it before: the forgets' audit values … are redacted, and what was derived from them is erased", and
an erasure removes "the governance record of any decision that names one … (a forget across two sessions, one
of them erased since: the replay forgets the same memories, and its erasure removes the same records …)
(`test_erasure_forget_replay.py` …: the replay's state hash equals the source's)".

The erasure looks for what retention forgot *of the session* (``forgotten_memories`` by ``session_id``); a
scene has none, so the forgotten scene, made from the erased session's atom, is not reached: the source keeps
the forget's governance record naming it (with ``ALTM_RETENTION_TOMBSTONES`` also its 'forgotten' tombstone;
after a compaction also its compress signal). The replay cannot open s1, never has a scene (one session is
left), and refuses the forget ("memory to forget … is not in this shard", a rejection pending review). Every
state table and the state hash should equal the source's.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

TURNS = [make_turn(1, "I decided to call Marco every Sunday evening.", session="s1"),
         make_turn(2, "I decided to go hiking with Marco near the lake.", session="s2").model_copy(
             update={"timestamp": T0 + timedelta(days=50)})]


@pytest.mark.parametrize(("tombstones", "compacted"), [(False, False), (True, False), (False, True)],
                         ids=["forget", "forget-with-tombstones", "compacted-then-forgotten"])
async def test_a_replay_after_erasing_a_session_of_a_forgotten_scene_equals_the_source(
        settings: Settings, tmp_path: Path, tombstones: bool, compacted: bool) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l3": 30.0, "retired_key_grace_s": 0.0,
                                    "retention_tombstones": tombstones})
    async with store_with(s, TURNS) as (rt, app):
        (scene,) = rows(s.data_dir, "SELECT memory_id, content FROM memories WHERE layer='L3'")
        assert "across sessions s1, s2" in str(scene["content"])
        if compacted:
            assert await app.admin.compaction(T0 + timedelta(days=45)) > 0
            await rt.run_until_idle()
        assert await app.admin.retention(T0 + timedelta(days=60)) == 1  # the scene, valid from day 0
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L3'") == []
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    replay = await replayed_equal(s, tmp_path / "fresh")
    assert rows(replay, "SELECT reason FROM rejections") == []
