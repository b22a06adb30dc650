"""A scene gathers stored atoms, and one of them may re-assert an anti-pattern stored after it (an atom is
judged when it is stored, against the anti-patterns stored by then). The scene was refused when it was
recomputed after the anti-pattern reached the writer, and kept, never judged again, when it was stored before:
the state depended on batching (a replay batches the log differently), and a scene naming the anti-pattern's
own atom beside the same line was stored (its negation is in its text) while another was refused. As a
capsule is, a scene that re-asserts an anti-pattern is now held for review in either order, and it re-asserts
one when one of its member atoms does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from altm.core import Settings, TurnEvent
from tests.support.memories import running
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import make_turn

SAID = [make_turn(1, "I decided to use pickle for the session cache with Marco.", session="s1"),
        make_turn(2, "I decided to review the session cache with Marco on Friday.", session="s2")]
ANTI = make_turn(3, "Never use pickle for the session cache because unpickling untrusted data runs code.",
                 session="s3")
LATER = make_turn(4, "I decided to call Marco about the deploy next week.", session="s4")


async def _scenes(settings: Settings, batches: Sequence[Sequence[TurnEvent]]) -> list[dict[str, Any]]:
    async with running(settings) as runtime:
        for turns in batches:
            await runtime.publish(list(turns))
            await runtime.run_until_idle()
    assert not rows(settings.data_dir, "SELECT reason FROM rejections")
    return rows(settings.data_dir, "SELECT content, trust_status FROM memories WHERE layer='L3' ORDER BY content")


async def test_a_scene_re_asserting_an_anti_pattern_is_held_whichever_comes_first(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    at_once = await _scenes(s.model_copy(update={"data_dir": tmp_path / "at-once"}), [[*SAID, ANTI, LATER]])
    scene_first = await _scenes(s, [SAID, [ANTI], [LATER]])
    assert scene_first == at_once
    # both scenes list the decision; the session cache's lists the anti-pattern's own atom too, which made its
    # whole text read as speaking against the pattern: each member is judged as an atom now
    assert [(str(r["content"]).split(" — ")[0], r["trust_status"]) for r in scene_first] == [
        ("Scene: Marco", "uncertain"), ("Scene: session cache", "uncertain")], scene_first
    await replayed_equal(s, tmp_path / "replayed")
