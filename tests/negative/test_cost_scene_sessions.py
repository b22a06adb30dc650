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

import orjson

from altm.core import Settings
from tests.support.memories import running
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
