"""What stands on a reviewed atom follows the reviewer both ways, and a replay agrees.

Rejected, then approved after all: a scene drops the atom's line and takes it back; a scene the atoms nobody
rejected no longer make leaves recall and comes back; a rejected correction's facet leaves recall, the version it
corrected is current again, and the correction supersedes it again once approved. Each sequence replays into a
fresh data dir with every state table equal (``tests/support/replay.py``).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

PEANUTS = "My friend Marco is allergic to peanuts."
DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."
_SCENES = "SELECT content, lc_state, trust_reason FROM memories WHERE layer='L3'"


def _atom(settings: Settings, content: str) -> str:
    (found,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (content,))
    return str(found["memory_id"])


async def test_a_scene_drops_a_rejected_line_and_takes_it_back_when_approved(settings: Settings,
                                                                             tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "I decided to call Marco every Sunday evening.", "s1")
        await say(rt, 2, "I decided to go hiking with Marco near the lake.", "s2")
        await say(rt, 3, PEANUTS, "s3")
        atom = _atom(s, PEANUTS)
        (first,) = rows(s.data_dir, _SCENES)
        await app.review_decide(SCOPE, atom, "reject")
        await rt.run_until_idle()
        (rejected,) = rows(s.data_dir, _SCENES)
        await app.review_decide(SCOPE, atom, "approve")
        await rt.run_until_idle()
        (approved,) = rows(s.data_dir, _SCENES)
    assert "peanuts" in str(first["content"]) and "across sessions s1, s2, s3" in str(first["content"])
    assert "peanuts" not in str(rejected["content"]) and "across sessions s1, s2\n" in str(rejected["content"])
    assert approved == first, (approved, first)  # the same scene as before the rejection
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_scene_left_without_enough_sessions_leaves_recall_and_comes_back(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "I decided to call Marco every Sunday evening.", "s1")
        await say(rt, 2, PEANUTS, "s2")
        atom = _atom(s, PEANUTS)
        (first,) = rows(s.data_dir, _SCENES)
        await app.review_decide(SCOPE, atom, "reject")
        await rt.run_until_idle()
        (rejected,) = rows(s.data_dir, _SCENES)
        found = [h.content for h in app.search(SCOPE, None, "Marco peanuts").hits if h.layer == "L3"]
        await app.review_decide(SCOPE, atom, "approve")
        await rt.run_until_idle()
        (approved,) = rows(s.data_dir, _SCENES)
    assert first["lc_state"] == "active" and "peanuts" in str(first["content"])
    assert rejected["lc_state"] == "rejected" and "rejected by a reviewer" in str(rejected["trust_reason"])
    assert found == [], found  # out of recall with the only atom of its second session
    assert approved["lc_state"] == "active" and approved["content"] == first["content"], approved
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_rejected_correction_gives_the_facet_back_until_it_is_approved(settings: Settings,
                                                                                tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        await say(rt, 3, LIGHT, "b")
        light = _atom(s, LIGHT)
        await app.review_decide(SCOPE, light, "reject")
        await rt.run_until_idle()
        rejected = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        await app.review_decide(SCOPE, light, "approve")
        await rt.run_until_idle()
        approved = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        facets = rows(s.data_dir, "SELECT content, superseded_by FROM memories WHERE layer='L4' ORDER BY content")
    assert rejected == [f"Preference (mode editor): {DARK}"]
    assert approved == [f"Preference (mode editor): {LIGHT}"], facets
    assert facets[0]["content"].endswith(DARK) and facets[0]["superseded_by"] is not None, facets
    await replayed_equal(s, tmp_path / "replayed")
