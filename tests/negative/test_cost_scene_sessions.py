"""A scene's text and attributes list every session that mentions its anchor, and the scene is written again at
each new one: quadratic bytes in the sessions that mention a hot entity.

Red team rt22 (scaling): "We decided to meet Priya on Friday about item 7." once a session, 100 / 200 / 400
sessions: each of the two scenes (Priya, Friday) is re-published 99 / 199 / 399 times, its last version 5.8 / 8.7 /
14.5 KB, the scene's changes on altm.changes 0.43 / 1.16 / 3.49 MB; the shard's audit values of memories 2.1 /
5.5 / 16.0 MB; govern busy 0.7 / 1.9 / 6.1 s (its SQL scan of the anchor's mentions, 4.3 M / 14.5 M / 52.5 M
SQLite VM steps in all). Some 35,000 sessions naming one colleague make a scene change over Kafka's 1 MiB record limit.
- ``scene.render`` (altm/core/scene.py:26) writes "across sessions s1, s2, …" with every session, and
  ``GovernProcessor._scene`` (altm/pipeline/processors/govern.py:446-452) keeps them all in ``attributes.sessions``
  too (the member lines are capped at ``MAX_ITEMS`` = 12, the sessions are not).
- ``MemoryReader.scene_members`` (altm/store/_reader.py:169) scans every mention of the anchor (a window over all
  of them) at each recomputation.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from altm.core import Settings, scene
from tests.negative.test_erasure_scene_lines import ERASED, RESTATES
from tests.support.memories import running, said_after_erasure
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import make_turn

SESSIONS = 60


async def test_a_scene_change_does_not_grow_with_every_session_of_its_anchor(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with running(s) as rt:
        for b in range(0, SESSIONS, 10):  # ten sessions a batch
            await rt.publish([make_turn(i, f"We decided to meet Priya on Friday about item {i}.",
                                        session=f"session-{i:04d}") for i in range(b, b + 10)])
            await rt.run_until_idle()
        scenes: dict[str, list[int]] = {}
        for r in await rt.log.read_all(["altm.changes"]):
            memory = orjson.loads(r.value).get("memory") or {}
            if memory.get("layer") == "L3":
                scenes.setdefault(memory["memory_id"], []).append(len(r.value))
    assert scenes
    for sizes in scenes.values():
        assert len(sizes) >= 5
        assert sizes[-1] <= 1.2 * sizes[1], (
            f"a scene's change grew from {sizes[1]} to {sizes[-1]} bytes over {SESSIONS} sessions (its member lines "
            "are capped): its header and attributes list every session that mentions the anchor")


async def test_a_scene_of_many_sessions_left_without_a_member_counts_the_sessions_left(
        settings: Settings, tmp_path: Path) -> None:
    """The write guard leaves out of a scene a line that re-states erased content, and the sessions only that
    line came from: a scene that names twelve of its sessions and counts the rest counts those left, names the
    first twelve of them, and replays the same."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    hobbies = ["chess", "tennis", "golf", "poker", "sailing", "painting", "cooking", "cycling", "fishing",
               "skiing", "rowing", "climbing", "surfing"]
    later = [make_turn(10 + i, f"I decided to try {h} with Marco next month.", session=f"s{3 + i}")
             for i, h in enumerate(hobbies)]
    await said_after_erasure(s, make_turn(1, ERASED, session="s1"), later,
                             before=[make_turn(2, RESTATES, session="s2")])
    (found,) = rows(s.data_dir, "SELECT content, attributes FROM memories WHERE layer='L3' "
                                "AND content LIKE 'Scene: Marco %'")
    spans = sorted(f"s{3 + i}" for i in range(len(hobbies)))  # s2's only atom re-states the erased message
    assert "Denver" not in found["content"]
    assert str(found["content"]).startswith(
        f"Scene: Marco — 11 memories across 13 sessions: {', '.join(spans[:12])} and 1 more\n"), found["content"]
    attributes = orjson.loads(found["attributes"])
    assert attributes["sessions"] == spans[:12] and attributes[scene.SESSION_COUNT] == 13
    await replayed_equal(s, tmp_path / "replayed")


def test_a_scene_names_at_most_twelve_sessions_and_counts_the_rest() -> None:
    sessions = [f"s{i:02d}" for i in range(1, 31)]
    text = scene.render("Priya", scene.named(sessions), ["- [s01] fact: Priya leads QA"], len(sessions))
    assert text.splitlines()[0] == (f"Scene: Priya — 1 memories across 30 sessions: {', '.join(sessions[:12])} "
                                    "and 18 more")
    assert scene.counted(sessions) == {scene.SESSION_COUNT: 30} and scene.counted(sessions[:12]) == {}
    assert scene.render("Priya", ["s1", "s2"], []) == "Scene: Priya — 0 memories across sessions s1, s2"
