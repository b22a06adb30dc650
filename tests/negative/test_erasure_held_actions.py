"""An erasure of a session that a held action names (a supersede kept for review between two conflicting
preferences, in one session or in two; found by a randomized replay check). The source kept the held action
(its inputs redacted) and its decision's governance events, whose inputs quoted both preferences in the
clear; a replay, which cannot open the erased session's records, never holds that action: another state than
the source's, and erased text left in the shard."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

DARK, LIGHT = "I prefer dark mode in every editor.", "I prefer light mode in every editor."


@pytest.mark.parametrize("sessions", [("s1", "s2"), ("s1", "s1")], ids=["two-sessions", "one-session"])
async def test_a_replay_after_erasing_a_session_a_held_action_names_rebuilds_the_same_state(
        settings: Settings, tmp_path: Path, sessions: tuple[str, str]) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(1, DARK, session=sessions[0]), make_turn(2, LIGHT, session=sessions[1])]
    async with store_with(s, turns) as (rt, app):
        assert rows(s.data_dir, "SELECT 1 FROM held_actions") != []  # the supersede is held for review
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM held_actions") == []
    assert rows(s.data_dir, "SELECT 1 FROM governance_events WHERE inputs LIKE '%dark mode%'") == []
    await replayed_equal(s, tmp_path / "replayed")
