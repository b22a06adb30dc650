"""A scene keeps what its sessions said when its lines together hold an erased message's terms but none of
them re-states it, and leaves out a line that does: it is judged a line (a member atom) at a time, as a
capsule is judged a statement at a time. Before, the scene's whole text was judged: a scene gathers every
atom naming its anchor, so the anchor's name in each line and a term of the erased message here and another
there refused it whole (2 or 3 scenes per run of benchmarks/erasure_guard.py)."""

from __future__ import annotations

import orjson

from altm.core import scene
from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

ERASED = "My brother Marco is going through a divorce and moving back to Denver."


async def test_a_scene_whose_lines_only_together_hold_erased_terms_is_stored(settings: Settings) -> None:
    erased = make_turn(1, ERASED, session="s1")
    later = [make_turn(2, "I decided to help Marco with his divorce paperwork.", session="s2"),
             make_turn(3, "I decided Marco will handle moving the furniture on Saturday.", session="s3")]
    await said_after_erasure(settings, erased, later)
    atoms = rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L2'")
    assert len(atoms) == 2, atoms  # each line alone is admitted
    (found,) = rows(settings.data_dir, "SELECT content, evidence FROM memories WHERE layer='L3'")
    assert "divorce paperwork" in found["content"] and "moving the furniture" in found["content"]
    assert not rows(settings.data_dir, "SELECT 1 FROM rejections")


async def test_a_line_that_re_states_erased_content_is_left_out_of_the_scene(settings: Settings) -> None:
    said_before = [make_turn(2, "I decided to help my brother Marco with moving back to Denver after the divorce.",
                             session="s2")]
    erased = make_turn(1, ERASED, session="s1")
    later = [make_turn(3, "I decided to call Marco every Sunday evening.", session="s3"),
             make_turn(4, "I decided to go hiking with Marco near the lake.", session="s4")]
    await said_after_erasure(settings, erased, later, before=said_before)
    (found,) = rows(settings.data_dir, "SELECT content, evidence, attributes FROM memories WHERE layer='L3'")
    assert "Sunday evening" in found["content"] and "hiking with Marco" in found["content"]
    assert "Denver" not in found["content"] and "divorce" not in found["content"]
    assert len(scene.members(str(found["content"]))) == 2 and len(orjson.loads(found["evidence"])) == 2
    assert str(found["content"]).startswith("Scene: Marco — 2 memories across sessions s3, s4\n")
    assert orjson.loads(found["attributes"])["sessions"] == ["s3", "s4"]
    assert '"guard_left_out":"1"' in str(found["attributes"]).replace(" ", "")


def test_scene_members_are_its_lines_after_the_header() -> None:
    lines = [scene.member("s2", "decision", "help Marco pack"), scene.member("s3", "fact", "Marco likes\nhiking"),
             scene.member(None, "preference", "Marco prefers tea")]
    text = scene.render("Marco", ["s2", "s3"], lines)
    assert text.splitlines()[0] == "Scene: Marco — 3 memories across sessions s2, s3"
    assert scene.members(text) == ["- [s2] decision: help Marco pack", "- [s3] fact: Marco likes\nhiking",
                                   "- [None] preference: Marco prefers tea"]


async def test_a_scene_left_with_one_session_is_refused(settings: Settings) -> None:
    said_before = [make_turn(2, "I decided to help my brother Marco with moving back to Denver after the divorce.",
                             session="s2")]
    erased = make_turn(1, ERASED, session="s1")
    later = [make_turn(3, "I decided to call Marco every Sunday evening.", session="s3")]
    await said_after_erasure(settings, erased, later, before=said_before)
    assert not rows(settings.data_dir, "SELECT 1 FROM memories WHERE layer='L3'")
    (refused,) = rows(settings.data_dir, "SELECT reason FROM rejections WHERE payload LIKE '%\"kind\":\"scene\"%'")
    assert "matches erased content" in str(refused["reason"])
