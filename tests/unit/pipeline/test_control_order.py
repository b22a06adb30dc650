"""The order of control events and turns (``altm.bus._order``, ``altm.pipeline.runtime._order``): a control event
that orders derivation carries the turns offset it was sent at; the embedded runtime takes it up once the turns
before it are derived, and takes the turns after it up only once it is applied, as a replay does."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from altm.bus import host_record, marked, turns_end
from altm.bus.embedded import EmbeddedLog
from altm.core import ControlAction, ControlEvent, Erasure, Settings, Topic, all_topic_specs, derive_id, topic_name
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TS = datetime(2026, 12, 1, tzinfo=UTC)


def _erase_session(session: str) -> ControlEvent:
    return ControlEvent(event_id=derive_id("ctl", SCOPE.path, "erase", session, TS.isoformat()), scope=SCOPE,
                        timestamp=TS, action=ControlAction.ERASE, session_id=session,
                        payload=Erasure(target="session", session_id=session).model_dump())


def _pin(memory_id: str) -> ControlEvent:
    return ControlEvent(event_id=derive_id("ctl", SCOPE.path, "pin", memory_id, TS.isoformat()), scope=SCOPE,
                        timestamp=TS, action=ControlAction.PIN, target_ids=(memory_id,), payload={})


async def test_a_control_event_that_orders_derivation_carries_the_turns_before_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, partitions=4)
    log = EmbeddedLog(tmp_path / "log.db")
    await log.start()
    try:
        await log.ensure_topics(all_topic_specs(4, settings.topic_prefix))
        await log.publish_many([host_record(settings, make_turn(i)) for i in range(2)])
        records = await marked(log, settings.topic_prefix, [
            host_record(settings, make_turn(2)), host_record(settings, _erase_session("s1")),
            host_record(settings, make_turn(3)), host_record(settings, _pin("mem_x"))])
    finally:
        await log.stop()
    control = topic_name(Topic.CONTROL, settings.topic_prefix)
    ends = [turns_end(r) for r in records if r.topic == control]
    assert ends == [3, None]  # two turns on the log and one before it in the batch; a pin orders nothing


async def test_an_erasure_meets_the_turns_before_it_derived_and_the_turns_after_it_are_kept(
        settings: Settings) -> None:
    """Sent together: turns of s1, the erasure of s1, a turn of s1 again. Before, the runtime captured all three
    turns first (the searchable path) and applied the erasure while s1's capsule was still to be folded: the
    capsule never existed, and the turn sent after the erasure was erased with the session."""
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})  # sealed, the last turn's key goes
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(1, "We decided to deploy the billing service on Tuesdays."),
                          make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin."),
                          _erase_session("s1"),
                          make_turn(3, "Priya owns the billing service and reviews every schema change.")])
        await rt.run_until_idle()
    folded = rows(s.data_dir, "SELECT 1 FROM audit_log WHERE actor='fold' AND action='insert'")
    assert folded, "the erasure was applied before the turns sent before it were folded"
    kept = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")
    assert [r["content"] for r in kept] == ["Priya owns the billing service and reviews every schema change."]


async def test_under_load_that_never_idles_the_erasure_is_taken_up_after_the_wait(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not held for ever: while the stages always have something to do, the erasure is taken up after
    CONTROL_WAIT_S, and the turns after it are captured after it again."""
    async with embedded(settings.model_copy(update={"embedder": "none", "derive_every_steps": 1})) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(i) for i in range(3)] + [_erase_session("s1"), make_turn(9, session="s2")])

        async def control_lag() -> int:
            lag = 0
            for stage in rt._stages:
                if rt._order.controls(stage):
                    lag += sum((await stage.consumer.lags()).values())
            return lag

        assert await rt.step() > 0
        assert await control_lag() == 3  # lifecycle, sweep and control each still have it: s1 is being derived
        monkeypatch.setattr("altm.pipeline.runtime._order.CONTROL_WAIT_S", 0.0)
        await rt.step()
        assert await control_lag() == 0  # taken up, though the stages had work
        await rt.run_until_idle()
        assert [r["session_id"] for r in rows(settings.data_dir, "SELECT session_id FROM memories WHERE layer='L0'")
                ] == ["s2"]


ANN = SCOPE.model_copy(update={"user_id": "ann"})  # another partition than SCOPE's


def _pin_of_ann(i: int) -> ControlEvent:
    return ControlEvent(event_id=derive_id("ctl", ANN.path, "pin", str(i), TS.isoformat()), scope=ANN,
                        timestamp=TS, action=ControlAction.PIN, target_ids=(f"mem_{i}",), payload={})


async def test_the_turns_between_two_erasures_are_captured_before_the_second(settings: Settings) -> None:
    """Found by a review: the idle step that let the turns after the first erasure go also took the second one
    up, before those turns were captured, so the turn sent before the second erasure outlived it."""
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(1, "We decided to deploy the billing service on Tuesdays.", session="s1"),
                          _erase_session("s1"),
                          make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2"),
                          ControlEvent(event_id=derive_id("ctl", SCOPE.path, "erase", "s2", TS.isoformat()),
                                       scope=SCOPE, timestamp=TS, action=ControlAction.ERASE, session_id="s2",
                                       payload=Erasure(target="session", session_id="s2").model_dump())])
        await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT session_id, content FROM memories")


async def test_control_events_before_a_pending_erasure_are_not_slowed_down(settings: Settings) -> None:
    """Found by a review: while an erasure was pending, every control stage took one event a step, and only in
    a step with nothing else to do: 200 pins of another user ahead of it took 819 steps (8 before)."""
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([*(_pin_of_ann(i) for i in range(200)), make_turn(1), _erase_session("s1"),
                          make_turn(2, "Sent after the erasure.")])
        steps = 0
        while await rt.step() or await rt.lag():
            steps += 1
            assert steps < 60, "the control events went one a step"
    assert [r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")] == [
        "Sent after the erasure."]


async def test_an_erasure_behind_more_control_events_than_a_poll_is_still_found(settings: Settings) -> None:
    """Found by a review: the read-ahead read one poll batch over all partitions, so control events of a lower
    partition hid an erasure in a higher one and the turn sent after it was erased with the session."""
    s = settings.model_copy(update={"embedder": "none", "seal_log": False, "poll_batch": 4})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([_pin_of_ann(i) for i in range(6)])
        await rt.publish([make_turn(1), make_turn(2), _erase_session("s1"), make_turn(3, "Sent after the erasure.")])
        await rt.run_until_idle()
    assert [r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")] == [
        "Sent after the erasure."]


async def test_an_erasure_its_stages_keep_failing_on_holds_no_turn_back_for_ever(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a review: a control stage that failed on the erasure every time kept it pending, and the turns
    after it (of its partition) were never captured. After GIVE_UP_S they are."""
    from altm.pipeline.processors.control import ControlProcessor

    async def failing(self: ControlProcessor, events: object, ctx: object) -> None:
        raise RuntimeError("the shard is unavailable")

    monkeypatch.setattr(ControlProcessor, "process_batch", failing)
    monkeypatch.setattr("altm.pipeline.runtime._order.GIVE_UP_S", 0.3)
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(1), _erase_session("s1"), make_turn(2, session="s2")])
        loop = asyncio.get_running_loop()
        start = loop.time()
        while loop.time() - start < 3.0 and len(rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0'")) < 2:
            with contextlib.suppress(RuntimeError):
                await rt.step()
    assert sorted(r["session_id"] for r in rows(s.data_dir, "SELECT session_id FROM memories WHERE layer='L0'")
                  ) == ["s1", "s2"]
