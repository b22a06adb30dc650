"""The control order in a Kafka worker (``altm.pipeline.runtime.kafka._order``), without a broker: the lanes'
gates, and how a tick moves them. A marked control event holds the capture lane's turns at its mark, is taken up
by the control lanes once its partition is derived up to the mark, and the turns after it wait until what it
caused is derived too; nothing waits longer than ``CONTROL_WAIT_S``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from altm.bus import TURNS_END_HEADER, TopicPartition, turns_end
from altm.core import Settings, Topic, topic_name
from altm.pipeline import ProcessorContext
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime, Lane
from altm.store import ShardSet
from tests.support.lanes import Member
from tests.support.lanes import records as _records
from tests.support.lanes import until as _until


def _marked(partition: int, offset: int, mark: int, topic: str) -> list[Any]:
    return _records(partition, range(offset, offset + 1), topic=topic,
                    headers=((TURNS_END_HEADER, str(mark).encode()),))


@pytest.fixture
def rt(tmp_path: Path) -> Any:
    """Every default stage, partition 0 of every topic owned, nothing on the log (the stand-in member's end
    offsets are 0) and nothing fetched."""
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    shards = ShardSet(settings.data_dir, settings.partitions)
    runtime: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(),
                                "log-id")
    owned = {TopicPartition(topic_name(t, settings.topic_prefix), 0) for t in Topic if t is not Topic.DLQ}
    runtime._owned_tps = frozenset(owned)
    runtime._member = Member(owned, committed=0, end=0)
    runtime._ready.add(0)
    yield runtime
    shards.close()


def _lanes(rt: Any) -> tuple[Lane, list[Lane], Lane]:
    capture = next(lane for lane in rt.lanes if lane.name == "capture")
    derive = next(lane for lane in rt.lanes if lane.topic.endswith("changes"))
    return capture, rt.order.control, derive


def test_a_lane_takes_nothing_at_or_past_its_gate_and_keeps_its_marks() -> None:
    gates = {0: 2}
    lane = Lane("altm.control", [], batch=10, opener=lambda rec, ds: rec, ready=lambda p: True,
                gate=gates.get, marker=turns_end)
    lane.put(0, _records(0, range(0, 2), topic="altm.control"))
    lane.put(0, _marked(0, 2, 7, "altm.control") + _marked(0, 3, 9, "altm.control"))
    lane.put(1, _records(1, range(0, 2), topic="altm.control"))
    assert lane.takeable() == 2 + 2  # partition 0 below its gate, and partition 1
    taken = lane._take()
    assert sorted((r.partition, r.offset) for r in taken) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert lane.first_mark(0) == (2, 7)
    lane.done[0] = 3  # the first marked record handled
    assert lane.first_mark(0) == (3, 9)
    gates[0] = 4
    assert [r.offset for r in lane._take() if r.partition == 0] == [2, 3]
    lane.forget([0])
    assert lane.first_mark(0) is None


async def test_an_erasure_holds_the_turns_after_it_until_it_is_taken_up_and_settled(rt: Any) -> None:
    capture, control, derive = _lanes(rt)
    for lane in control:
        lane.put(0, _records(0, range(0, 2), topic=lane.topic) + _marked(0, 2, 5, lane.topic))
    assert rt.order.capture_gate(0) == 5  # the turns from offset 5 on wait
    assert {rt.order.control_gate(0)} == {2}  # the control events before it go, it does not yet
    await rt.order.tick()
    assert rt.order.control_gate(0) == 2  # the turns before it are not captured yet
    capture.done[0] = 5
    derive.put(0, _records(0, range(0, 1), topic=derive.topic))  # a change of the partition still queued
    await rt.order.tick()
    assert rt.order.control_gate(0) == 2
    derive.forget([0])
    await rt.order.tick()
    assert rt.order.control_gate(0) == 3 and rt.order.taken_up == 1  # derived up to its mark: taken up
    for lane in control:
        lane.done[0] = 3  # every control lane handled it
    await rt.order.tick()
    assert rt.order.pending(0) is None
    assert rt.order.capture_gate(0) == 5  # settling: what it caused is derived in a later tick
    await rt.order.tick()
    assert rt.order.capture_gate(0) is None


async def test_what_the_erasure_caused_is_derived_before_the_turns_after_it(rt: Any) -> None:
    capture, control, derive = _lanes(rt)
    for lane in control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    capture.done[0] = 5
    await rt.order.tick()
    for lane in control:
        lane.done[0] = 1
    await rt.order.tick()  # taken up: settling
    derive.put(0, _records(0, range(0, 3), topic=derive.topic))  # the changes the erasure caused
    await rt.order.tick()
    assert rt.order.capture_gate(0) == 5
    derive.forget([0])
    rt._member = Member(set(rt._owned_tps), committed=0, end=3)  # on the log, not handled yet
    for lane in rt.order.deriving:
        if lane is not derive:
            lane.done[0] = 3
    await rt.order.tick()
    assert rt.order.capture_gate(0) == 5
    derive.done[0] = 3
    await rt.order.tick()
    assert rt.order.capture_gate(0) is None


async def test_under_load_that_never_derives_the_partition_nothing_waits_longer_than_the_bound(
        rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 0.2)
    _capture, control, derive = _lanes(rt)
    for lane in control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    derive.put(0, _records(0, range(0, 1), topic=derive.topic))  # always something to derive
    await rt.order.tick()
    assert rt.order.control_gate(0) == 0
    await asyncio.sleep(0.25)
    await rt.order.tick()
    assert rt.order.control_gate(0) == 1  # taken up after the wait
    for lane in control:
        lane.done[0] = 1
    await rt.order.tick()
    assert rt.order.capture_gate(0) == 5
    await asyncio.sleep(0.25)
    await rt.order.tick()
    assert rt.order.capture_gate(0) is None  # the turns after it go on after the wait


async def test_an_event_its_lanes_keep_failing_on_holds_no_turn_back_after_the_give_up(
        rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.GIVE_UP_S", 0.2)
    _, control, _ = _lanes(rt)
    for lane in control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    await rt.order.tick()
    assert rt.order.capture_gate(0) == 5
    await asyncio.sleep(0.25)
    await rt.order.tick()
    assert rt.order.capture_gate(0) is None


async def test_capture_takes_no_turn_fetched_before_the_control_events_published_before_it(rt: Any) -> None:
    """A control event on the log the worker has not fetched may come before the turns it has: turns wait until
    the control topic is fetched up to its end asked after their fetch, and a later control event (a steady
    stream of feedback) does not hold them back."""
    control = TopicPartition(topic_name(Topic.CONTROL, rt.settings.topic_prefix), 0)
    owned = set(rt._owned_tps)
    rt._member = Member(owned, committed=0, end=4)  # four control events on the log
    asking = asyncio.create_task(rt.order.ask())
    try:
        rt.order.fetched_turns(0, 10)
        assert rt.order.capture_gate(0) == 10  # the control end after this fetch is not known yet
        await _until(lambda: rt.order._needs[0][0].end == 4)
        assert rt.order.capture_gate(0) == 10  # none of the four fetched
        rt._next[control] = 4
        assert rt.order.capture_gate(0) is None
        rt._member = Member(owned, committed=0, end=6)
        rt.order.fetched_turns(0, 20)
        await _until(lambda: rt.order._needs[0][-1].end == 6)
        rt._member = Member(owned, committed=0, end=9)
        rt.order.fetched_turns(0, 30)
        assert rt.order.capture_gate(0) == 20  # the turns of the first fetch go, the others wait
        await _until(lambda: rt.order._needs[0][-1].end == 9)
        rt._next[control] = 7  # past the second fetch's end, not the third's
        assert rt.order.capture_gate(0) == 30
        for lane in rt.order.control:
            lane.put(0, _marked(0, 7, 25, lane.topic))
        assert rt.order.capture_gate(0) == 25  # a pending event holds at its mark (a later one's is not before it)
    finally:
        asking.cancel()
        await asyncio.gather(asking, return_exceptions=True)


async def test_a_partition_given_up_forgets_its_order(rt: Any) -> None:
    capture, control, _ = _lanes(rt)
    for lane in control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    capture.done[0] = 5
    await rt.order.tick()
    assert rt.order.control_gate(0) == 1
    await rt.revoked(frozenset(rt._owned_tps))
    assert rt.order.pending(0) is None and rt.order.capture_gate(0) is None
