"""Found by a randomized replay check: a replay carries the source's tombstones from its start, so they
refused content the source had admitted before the erasure was made. Saying the same thing in two sessions
and erasing one copy (one memory) kept the other copy in the source; the replay refused the earlier copy as
"matches erased content", and lost it and what was derived from it."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SECRET = "My locker combination is 31-07-1999 and the key sits under the blue ZEBRA-4471 mat."
TURNS = [make_turn(1, SECRET, session="s1"), make_turn(2, "The staging cluster runs in Dublin.", session="s1"),
         make_turn(3, SECRET, session="s2")]


async def test_a_replay_admits_what_the_source_admitted_before_an_erasure(settings: Settings,
                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (rt, app):
        (later,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id='s2'")
        await app.erase(SCOPE, "memory", memory_id=later["memory_id"])
        await rt.run_until_idle()
        await rt.publish([make_turn(4, SECRET, session="s3")])
        await rt.run_until_idle()
    kept = rows(s.data_dir, "SELECT session_id FROM memories WHERE layer='L0' AND content LIKE '%ZEBRA-4471%'")
    assert [r["session_id"] for r in kept] == ["s1"]  # the copy said before stays; the one after is refused
    target_dir = await replayed_equal(s, tmp_path / "replayed")
    again = rows(target_dir, "SELECT session_id FROM memories WHERE layer='L0' AND content LIKE '%ZEBRA-4471%'")
    assert [r["session_id"] for r in again] == ["s1"]


async def test_an_erasure_of_a_memory_the_replay_never_derived_still_makes_its_tombstones_hold(
        settings: Settings, tmp_path: Path) -> None:
    """Found by the randomized check (seed 113): one memory erased (the user's facet), then its agent; the
    replay cannot open the agent's records, so it never derived the facet and its erasure of it was void,
    which left the facet's tombstone pending for good. The same preference said again later formed the same
    facet: voided in the source (its tombstone held), stored in the replay."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    said = "I prefer dark mode in every editor."
    async with store_with(s, [make_turn(1, said, session="s1")]) as (rt, app):
        (facet,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L4'")
        await app.erase(SCOPE, "memory", memory_id=facet["memory_id"])
        await rt.run_until_idle()
        await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, said, session="s2")])
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE memory_id=?", (facet["memory_id"],)) == []
    await replayed_equal(s, tmp_path / "replayed")
