"""The write guard, leaving a member out of a scene that names twelve of its sessions and counts the rest, counts
the sessions left as govern does (review rt23): govern counts each content once, at its first saying
(``MemoryReader.scene_members``), but the guard took the session of every atom that mentions the anchor, so a
session whose only atom repeats an earlier line was counted, and named when it sorted early."""

from __future__ import annotations

import orjson

from altm.core import Settings
from tests.negative.test_erasure_scene_lines import ERASED, RESTATES
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

HOBBIES = ["chess", "tennis", "golf", "poker", "sailing", "painting", "cooking", "cycling", "fishing", "skiing",
           "rowing", "climbing", "surfing"]


async def test_guard_counts_the_sessions_of_a_scene_as_govern_does(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    later = [make_turn(10 + i, f"I decided to try {h} with Marco next month.", session=f"s{3 + i}")
             for i, h in enumerate(HOBBIES)]
    # the first line said again, later, in a session of its own: govern counts that content once
    later.append(make_turn(40, "I decided to try chess with Marco next month.", session="s00"))
    await said_after_erasure(s, make_turn(1, ERASED, session="s1"), later,
                             before=[make_turn(2, RESTATES, session="s2")])
    (found,) = rows(s.data_dir, "SELECT content, attributes FROM memories WHERE layer='L3' "
                                "AND content LIKE 'Scene: Marco %'")
    spans = sorted(f"s{3 + i}" for i in range(len(HOBBIES)))  # as govern counts them, s2's atom left out
    attributes = orjson.loads(found["attributes"])
    assert "s00" not in found["content"].splitlines()[0], found["content"]
    assert attributes["sessions"] == spans[:12] and attributes.get("session_count") == 13, found["content"]
