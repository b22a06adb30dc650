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


def _erasure_queued(rt: Any) -> tuple[Lane, list[Lane], Lane]:
    """An erasure marked 5 at control offset 0, queued in every control lane; the capture, control and deriving
    lanes."""
    capture, control, derive = _lanes(rt)
    for lane in control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    return capture, control, derive


async def _erasure_ready(rt: Any) -> tuple[Lane, list[Lane], Lane]:
    """``_erasure_queued``, the turns before it captured, and a tick: it may be taken up."""
    capture, control, derive = _erasure_queued(rt)
    capture.done[0] = 5
    await rt.order.tick()
    return capture, control, derive


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
    _, control, derive = await _erasure_ready(rt)
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
    _, control, derive = _erasure_queued(rt)
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
    _erasure_queued(rt)
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
    await _erasure_ready(rt)
    assert rt.order.control_gate(0) == 1
    await rt.revoked(frozenset(rt._owned_tps))
    assert rt.order.pending(0) is None and rt.order.capture_gate(0) is None


# Found by a review of the first version (each failed on it): a batch that ended while the tick asked the broker
# for the log's ends counted as derived; the bounds ran while a partition was being restored; one control lane
# failing on an event held the other control lanes (an erasure behind a sweep) for ever.


class LiveMember(Member):
    """end_offsets answers from a dict the test moves; ``during_ends`` runs while the request is 'on the wire'
    (after the broker answered, before the caller resumes), as when a lane's batch completes meanwhile."""

    def __init__(self, assigned: set[TopicPartition]) -> None:
        super().__init__(assigned, committed=0, end=0)
        self.ends: dict[TopicPartition, int] = {}
        self.during_ends: Any = None

    async def end_offsets(self, tps: Any) -> dict[TopicPartition, int]:
        answer = {tp: self.ends.get(tp, 0) for tp in tps}
        if self.during_ends is not None:
            hook, self.during_ends = self.during_ends, None
            hook()
        await asyncio.sleep(0)
        return answer


@pytest.fixture
def live_rt(rt: Any) -> Any:
    """``rt`` with a member whose end offsets the test moves (``LiveMember``)."""
    rt._member = LiveMember(set(rt._owned_tps))
    return rt


def _tp(rt: Any, topic: Topic) -> TopicPartition:
    return TopicPartition(topic_name(topic, rt.settings.topic_prefix), 0)


def _three(rt: Any) -> tuple[Any, Any, list[Any]]:
    capture = next(lane for lane in rt.lanes if lane.name == "capture")
    writer = next(lane for lane in rt.lanes if lane.name == "writer")
    changes = [lane for lane in rt.lanes if lane.topic == _tp(rt, Topic.CHANGES).topic]
    return capture, writer, changes


def _erasure_marked_5(rt: Any, *, captured: int) -> tuple[Any, Any, list[Any]]:
    """An erasure marked 5 queued in every control lane; capture has handled the turns before ``captured``, the
    writer proposals 0..9 (the log's end), the deriving lanes nothing (no change on the log)."""
    capture, writer, changes = _three(rt)
    for lane in rt.order.control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    capture.done[0] = captured
    writer.done[0] = 10
    for lane in changes:
        lane.done[0] = 0
    rt._member.ends = {_tp(rt, Topic.PROPOSALS): 10, _tp(rt, Topic.CHANGES): 0}
    return capture, writer, changes


async def test_erasure_not_taken_up_while_capture_batch_completes_during_the_ends_request(live_rt: Any) -> None:
    """Turns 0..4 before an erasure marked 5. Capture has handled 0..3 and its batch with turn 4 completes while the
    tick's end-offsets request is out: it published proposal 10 (the proposals log now ends at 11), the writer has
    applied up to 10 only. The tick must not take the erasure up (the proposal of turn 4 is not applied)."""
    rt = live_rt
    capture, writer, _ = _erasure_marked_5(rt, captured=4)
    m = rt._member

    def capture_batch_completes() -> None:  # broker already answered 10; now capture publishes proposal 10
        capture.done[0] = 5
        m.ends[_tp(rt, Topic.PROPOSALS)] = 11

    m.during_ends = capture_batch_completes
    await rt.order.tick()
    assert writer.done[0] < m.ends[_tp(rt, Topic.PROPOSALS)], "the writer has not applied proposal 10"
    assert rt.order.taken_up == 0, "erasure taken up before the turn before its mark was derived"


async def test_settling_not_released_while_writer_batch_completes_during_the_ends_request(live_rt: Any) -> None:
    """The erasure was taken up and handled; its proposal (offset 10) is in the writer's batch in flight. While the
    settling tick's end-offsets request is out, the writer finishes and publishes change 0. The tick must not
    release the turns after the erasure: change 0 is not derived."""
    rt = live_rt
    _, writer, changes = _erasure_marked_5(rt, captured=5)
    m = rt._member
    await rt.order.tick()
    assert rt.order.taken_up == 1
    for lane in rt.order.control:
        lane.done[0] = 1
    m.ends[_tp(rt, Topic.PROPOSALS)] = 11  # the erasure's proposal
    await rt.order.tick()  # settling
    assert rt.order.capture_gate(0) == 5

    def writer_batch_completes() -> None:
        writer.done[0] = 11
        m.ends[_tp(rt, Topic.CHANGES)] = 1

    m.ends_snapshot = None
    # the writer's batch is in flight when the ends are asked; the broker answers with the proposals end 11
    # (the erasure's proposal) and the changes end 0, then the batch completes and publishes change 0
    writer._current_parts = frozenset({0})

    def done_now() -> None:
        writer_batch_completes()
        writer._current_parts = frozenset()

    m.during_ends = done_now
    await rt.order.tick()
    assert all(lane.done[0] < m.ends[_tp(rt, Topic.CHANGES)] for lane in changes), "change 0 is not derived"
    assert rt.order.capture_gate(0) == 5, "turns after the erasure released before what it caused was derived"


async def test_a_restore_longer_than_the_bounds_does_not_let_turns_after_an_erasure_overtake_it(
        live_rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Partition 0 is being restored (not ready: no lane of it may take anything, none fails). An erasure marked 5 is
    queued, turns 0..9 too. The bounds (scaled down) pass while the partition restores: when it is ready, capture
    may take turns 5..9 (after the erasure) while the erasure has not been handled."""
    rt = live_rt
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 0.1)
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.GIVE_UP_S", 0.2)
    capture, _, _ = _three(rt)
    rt._ready.discard(0)
    for lane in rt.order.control:
        lane.put(0, _marked(0, 0, 5, lane.topic))
    capture.put(0, _records(0, range(0, 10), topic=capture.topic))
    for _ in range(4):  # the order's task keeps ticking while the shard restores
        await rt.order.tick()
        await asyncio.sleep(0.08)
    rt._ready.add(0)  # restored
    taken = [r.offset for r in capture._take()]
    erasure_handled = all(lane.done.get(0, 0) > 0 for lane in rt.order.control)
    assert erasure_handled or max(taken) < 5, f"capture takes turns {taken} before the erasure (mark 5) is handled"


async def test_an_erasure_is_not_held_for_ever_behind_a_sweep_its_own_lane_cannot_finish(
        live_rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control offset 0: a sweep (marked); offset 1: an erasure (marked). The control and lifecycle lanes handled the
    sweep; the sweep lane keeps failing on it (handle_until_done retries for ever: a store or bus failure). The
    erasure lane ('control') must get to the erasure at some point (lanes_of: 'an erasure never waits behind a
    sweep'; _order: 'Nothing waits for ever')."""
    rt = live_rt
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.CONTROL_WAIT_S", 0.05)
    monkeypatch.setattr("altm.pipeline.runtime.kafka._order.GIVE_UP_S", 0.1)
    capture, _, _ = _three(rt)
    capture.done[0] = 0
    for lane in rt.order.control:
        lane.put(0, _marked(0, 0, 0, lane.topic) + _marked(0, 1, 0, lane.topic))
    await rt.order.tick()
    assert rt.order.control_gate(0) == 1  # the sweep may be taken up
    for lane in rt.order.control:
        if lane.name != "sweep":
            lane.done[0] = 1  # handled the sweep; the sweep lane fails on it again and again
    for _ in range(20):
        await asyncio.sleep(0.05)
        await rt.order.tick()
    gate = rt.order.control_gate(0)
    assert gate is None or gate > 1, f"after 1 s (10x GIVE_UP_S) the erasure lane is still gated at {gate}"
