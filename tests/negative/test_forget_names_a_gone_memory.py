"""A retention pass that names one memory no longer there forgets none of the others it names.

The writer's ``forget`` (``altm/pipeline/writer/ops/lifecycle.py``) looks every named memory up with
``target_row``, which raises ``Rejection("memory to forget … is not in this shard")`` for a memory already
gone (only an *erased* one is let through: "erased, so gone either way"). One such id refuses the whole
proposal: every other memory the pass named stays, past retention, and a rejection lands in the review queue.

1. Two passes requested before the first is applied (``altm retention`` run twice in a row, by a cron and an
   operator, while the worker is busy; the admin service publishes and returns): the second pass names again
   what the first names, plus what became past retention since. The first forgets its memories; the second is
   refused whole, so what only it named (s2, past retention at day 60) is not forgotten.
2. ``altm replay --from-offset N`` (README, Trust and erasure: "Replaying the log (from the start or
   `--from-offset N`, a point in time for both host topics)"; Lifecycle: "Retention and compaction decisions
   are control events, so a replay repeats them"): the replay repeats the retention pass, which names a
   message before the start point that the replay never derived. The pass is refused whole, and the s2
   message and atom that the source forgot are stored again in the replay.

Expected: a memory named by a forget that is no longer there is gone either way (as an erased one is), and the
pass forgets the others it names.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings, TurnEvent
from altm.wiring import replay_into
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

OLDEST = "I decided to call Marco every Sunday evening."
OLD = "I decided to go hiking with Marco near the lake."
RECENT = "My friend Marco is allergic to peanuts."


def _said(i: int, text: str, session: str, day: int) -> TurnEvent:
    return make_turn(i, text, session=session).model_copy(update={"timestamp": T0 + timedelta(days=day)})


def _retention(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0})


def _contents(data_dir: Path) -> set[str]:
    return {str(r["content"]) for r in rows(data_dir, "SELECT content FROM memories WHERE layer IN ('L0', 'L2')")}


def _rejections(data_dir: Path) -> list[str]:
    return [str(r["reason"]) for r in rows(data_dir, "SELECT reason FROM rejections")]


async def test_a_second_pass_requested_before_the_first_applied_still_forgets_what_it_adds(
        settings: Settings) -> None:
    s = _retention(settings)
    turns = [_said(1, OLDEST, "s1", 0), _said(2, OLD, "s2", 20), _said(3, RECENT, "s3", 70)]
    async with store_with(s, turns) as (rt, app):
        first = await app.admin.retention(T0 + timedelta(days=40))  # s1 is past retention
        second = await app.admin.retention(T0 + timedelta(days=60))  # s1 and s2 are
        assert (first, second) == (2, 4)  # a message and its atom each
        await rt.run_until_idle()
        left = _contents(s.data_dir)
        refused = _rejections(s.data_dir)
    assert refused == [], f"the second pass was refused: {refused}"
    assert left == {RECENT}, f"past retention at day 60 and still stored: {left - {RECENT}}"


async def test_a_replay_from_an_offset_forgets_what_the_source_forgot(settings: Settings, tmp_path: Path) -> None:
    s = _retention(settings)
    async with store_with(s, [_said(1, OLDEST, "s1", 0), _said(2, OLD, "s2", 1)]) as (rt, app):
        assert await app.admin.retention(T0 + timedelta(days=60)) == 4
        await rt.run_until_idle()
        await rt.publish([_said(3, RECENT, "s3", 70)])
        await rt.run_until_idle()
        assert _contents(s.data_dir) == {RECENT}
    fresh = tmp_path / "from-offset-1"  # from the second turn on: the s1 message is before the start point
    await replay_into(s.data_dir, fresh, settings=s, from_offset=1)
    back = _contents(fresh) - {RECENT}
    assert back == set(), f"forgotten in the source, back in the replay: {back}; refused: {_rejections(fresh)}"
