"""Erasing an atom a scene counts but does not quote (a scene lists its first twelve atoms) leaves the scene as it
was, and a replay differs (review rt23; also on main before the session count): an erasure rebuilt the scenes it
deleted (those citing an erased atom) and no other, so the scene kept naming the erased session, or counting it.
The erasure names the nodes its erased atoms mention; govern computes their scenes again, and a scene those
atoms no longer make (its anchor is left in fewer sessions than a scene needs) goes with the erasure."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HOBBIES = ["chess", "tennis", "golf", "poker", "sailing", "painting", "cooking", "cycling", "fishing", "skiing",
           "rowing", "climbing", "surfing"]
SCENES = "SELECT content FROM memories WHERE layer='L3' AND content LIKE 'Scene: Priya %'"


async def test_scene_after_erasing_a_session_it_does_not_quote(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(i, f"I decided to try {h} with Priya.", session=f"s{i:02d}") for i, h in enumerate(HOBBIES)]
    turns.append(make_turn(13, "We decided Priya handles the invoices.", session="s13"))
    async with store_with(s, turns) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s13")
        await rt.run_until_idle()
    (found,) = rows(s.data_dir, SCENES)
    assert "s13" not in found["content"].splitlines()[0] and "14 sessions" not in found["content"], found["content"]
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_scene_its_erased_unquoted_member_made_goes_with_it(settings: Settings, tmp_path: Path) -> None:
    """Twelve atoms of one session and a thirteenth of another made a scene of two sessions; erasing the other
    session leaves one, which makes no scene: it goes, as a replay never made it."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    turns = [make_turn(i, f"I decided to try {h} with Priya.", session="s01") for i, h in enumerate(HOBBIES[:12])]
    turns.append(make_turn(20, "We decided Priya handles the invoices.", session="s02"))
    async with store_with(s, turns) as (rt, app):
        assert len(rows(s.data_dir, SCENES)) == 1
        await app.erase(SCOPE, "session", session_id="s02")
        await rt.run_until_idle()
    assert rows(s.data_dir, SCENES) == []
    await replayed_equal(s, tmp_path / "replayed")
