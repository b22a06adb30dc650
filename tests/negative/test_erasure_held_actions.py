"""An erasure of a session that a held action names (a supersede kept for review between two conflicting
preferences, in one session or in two; found by a randomized replay check). The source kept the held action
(its inputs redacted) and its decision's governance events, whose inputs quoted both preferences in the
clear; a replay, which cannot open the erased session's records, never holds that action: another state than
the source's, and erased text left in the shard."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from altm.store import state_rows
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
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
    target_dir = tmp_path / "replayed"
    await replay_into(s.data_dir, target_dir, settings=s)
    source, replayed = state_rows(s.data_dir), state_rows(target_dir)
    assert {t for t in source if source[t] != replayed[t]} == set()
    assert state_hash(s.data_dir) == state_hash(target_dir)
