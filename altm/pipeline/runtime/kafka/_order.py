"""The order of control events and turns in a Kafka worker (see :mod:`altm.bus._order`), as in the embedded
runtime (:mod:`altm.pipeline.runtime._order`) and a replay.

A control event that orders derivation carries the turns offset it comes before in its partition (its *mark*).
Everything about one user is in the same partition number of every topic, and a worker owns the same numbers of
each, so the order is kept per partition by the worker that owns it:

- while a marked event is queued or in flight in a control lane, the capture lane takes only the turns of that
  partition before its mark, and the control lanes every control event before it;
- it is taken up once the partition is *derived* up to its mark: capture has handled the turns before the mark,
  and the writer and the deriving lanes have nothing of the partition queued or in flight and have handled
  everything the log holds of it (asked of the broker, ``ORDER_TICK_S`` apart);
- the turns after it wait until what it caused is derived too (*settling*: derived again, in a later tick).

Nothing waits for ever: an event is taken up after ``CONTROL_WAIT_S``, the turns after it go on
``CONTROL_WAIT_S`` after that, and an event its lanes keep failing on holds no turn back after ``GIVE_UP_S``.

A turn fetched before every control event published before it could overtake one: after each fetch that
brought turns, the worker asks for the control topic's end offsets (a task of its own: fetching goes on), and
capture takes those turns once the control topic is fetched up to there (``fetched_turns``, ``ask``). A later
control event does not hold them back, so a steady stream of pins and feedback never starves capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from altm.bus import TopicPartition
from altm.pipeline.runtime.kafka._lane import Lane

log = logging.getLogger("altm.worker")

CONTROL_WAIT_S = 5.0
"""How long a marked control event waits, at most, for its partition to be derived up to its mark, and the turns
after it for what it caused."""
GIVE_UP_S = 2 * CONTROL_WAIT_S
"""A marked event pending this long (its lanes keep failing on it) no longer holds turns back."""
ORDER_TICK_S = 0.02
"""How often the order looks at the partitions it holds (one end-offsets request to the broker each time)."""
IDLE_TICK_S = 1.0

Ends = Callable[[Sequence[TopicPartition]], Awaitable[dict[TopicPartition, int]]]
Handled = Callable[[Lane, TopicPartition], Awaitable[int]]
"""What a lane has handled of a partition: its ``done``, else what the group committed."""
Positions = Callable[[Sequence[TopicPartition]], dict[TopicPartition, int]]
"""How far the worker has fetched (and queued) each partition."""


@dataclass
class _Need:
    """Turns of a partition fetched from ``first`` on wait until the control topic is fetched up to ``end``, its
    end offset asked after that fetch (None: not known yet; ``asked``: the question is on its way)."""

    first: int
    end: int | None = None
    asked: bool = False


@dataclass
class _Partition:
    """The order's state of one partition."""

    taking: tuple[int, int] | None = None  # (offset, mark) of the event the control lanes may take up
    settling: tuple[int, int] | None = None  # (mark, tick) of the event taken up, until its effects are derived
    settling_since: float = 0.0
    seen: dict[int, float] = field(default_factory=dict)  # offset of a pending event -> when first seen
    given_up: set[int] = field(default_factory=set)


class LaneOrder:
    """The gates of the capture lane and the control lanes, moved by ``tick``."""

    def __init__(self, capture: Lane | None, control: Sequence[Lane], deriving: Sequence[Lane], *,
                 ends: Ends, handled: Handled, positions: Positions, owned: Callable[[], set[int]],
                 ready: Callable[[int], bool] = lambda partition: True) -> None:
        self.capture = capture
        self.control = list(control)
        self.deriving = list(deriving)  # the lanes whose work must be done before an event is taken up
        self._ends = ends
        self._handled = handled
        self._positions = positions
        self._owned = owned
        self._ready = ready  # a partition being restored: its bounds do not run
        self._parts: dict[int, _Partition] = {}
        # partition -> the turns fetched that wait for the control topic to be fetched up to an end (in order)
        self._needs: dict[int, deque[_Need]] = {}
        self._asking = asyncio.Event()  # turns were fetched: ``ask`` asks for the control topic's end
        self._ticks = 0
        self.wake = asyncio.Event()  # set when a marked event is queued: the tick looks at once
        self.taken_up = 0  # marked events the control lanes were let take up (for tests and metrics)

    # the lanes' gates (synchronous: a lane asks before every take)

    def pending(self, partition: int) -> tuple[int, int] | None:
        """(offset, mark) of the first marked control event of ``partition`` some control lane has not handled,
        of those not given up (a lane that keeps failing on one holds neither the turns nor the other lanes)."""
        state = self._parts.get(partition)
        given_up = state.given_up if state is not None else set()
        firsts = (next((m for m in lane.marks(partition) if m[0] not in given_up), None) for lane in self.control)
        return min((m for m in firsts if m is not None), default=None)

    def control_gate(self, partition: int) -> int | None:
        """A control lane takes the events before the pending one, and it once it may be taken up."""
        pending = self.pending(partition)
        if pending is None:
            return None
        state = self._parts.get(partition)
        taking = state.taking if state is not None else None
        return pending[0] + 1 if taking == pending else pending[0]

    def capture_gate(self, partition: int) -> int | None:
        """Capture takes the turns before the pending event's mark, before the settling one's, and before those
        fetched while a control event published before them may not be fetched yet."""
        state = self._parts.get(partition)
        gates = []
        need = self._unmet(partition)
        if need is not None:
            gates.append(need)
        if state is not None and state.settling is not None:
            gates.append(state.settling[0])
        pending = self.pending(partition)
        if pending is not None:
            gates.append(pending[1])
        return min(gates, default=None)

    def fetched_turns(self, partition: int, first_offset: int) -> None:
        """Turns of ``partition`` from ``first_offset`` on were fetched: capture holds them until the control
        topic is fetched up to its end asked after this (``ask``)."""
        if not self.control:
            return
        needs = self._needs.setdefault(partition, deque())
        if not needs or needs[-1].asked:  # one question not sent yet covers the turns of every fetch before it
            needs.append(_Need(first_offset))
        self._asking.set()

    async def ask(self) -> None:
        """Ask the control topic's end offsets for the turns fetched since the last question (in a task of its
        own, so fetching never waits for it); a failure asks again."""
        while True:
            await self._asking.wait()
            self._asking.clear()
            asked = [(p, n) for p, needs in self._needs.items() for n in needs if not n.asked]
            if not asked or not self.control:
                continue
            for _, need in asked:
                need.asked = True
            topic = self.control[0].topic
            try:
                ends = await self._ends(sorted({TopicPartition(topic, p) for p, _ in asked}))
            except Exception:
                log.warning("asking the control topic's end offsets failed; the turns fetched wait", exc_info=True)
                for _, need in asked:
                    need.asked = False
                self._asking.set()
                await asyncio.sleep(ORDER_TICK_S * 10)
                continue
            for p, need in asked:
                need.end = ends.get(TopicPartition(topic, p), 0)
            if self.capture is not None:
                self.capture.wake()

    def _unmet(self, partition: int) -> int | None:
        """The first turns offset of ``partition`` capture may not take yet: fetched while the control topic's
        end after that fetch is unknown or not fetched (a control event published before those turns may be
        missing)."""
        needs = self._needs.get(partition)
        if not needs or not self.control:
            return None
        tp = TopicPartition(self.control[0].topic, partition)
        fetched = self._positions([tp]).get(tp, -1)
        while needs and needs[0].end is not None and fetched >= needs[0].end:
            needs.popleft()
        # a partition with a marked event pending is held at its mark already (a later event's mark is not
        # before it), and its control topic may be paused behind that event (its lanes hold many)
        if not needs or self.pending(partition) is not None:
            return None
        return needs[0].first

    # the order's task

    def forget(self, partitions: Sequence[int]) -> None:
        """Partitions given up (their next owner keeps the order from what was committed)."""
        for partition in partitions:
            self._parts.pop(partition, None)
            self._needs.pop(partition, None)

    def _held(self, partition: int) -> bool:
        """Whether an event of ``partition`` is being taken up or settling."""
        state = self._parts.get(partition)
        return state is not None and (state.taking is not None or state.settling is not None)

    def active(self) -> bool:
        return any(self.pending(p) is not None or self._held(p) for p in self._owned())

    async def run(self) -> None:
        """Tick while a partition is held, and at least every ``IDLE_TICK_S``."""
        while True:
            if not self.active():
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), IDLE_TICK_S)
            else:
                await asyncio.sleep(ORDER_TICK_S)
            try:
                await self.tick()
            except Exception:
                log.warning("the control order's tick failed; the next one tries again", exc_info=True)

    async def tick(self) -> None:
        """Let pending events be taken up, mark those taken up as settling, and release settled partitions."""
        self._ticks += 1
        owned = self._owned()
        for partition in [p for p in self._parts if p not in owned]:
            del self._parts[partition]
        now = time.monotonic()
        watched = {p for p in owned if self.pending(p) is not None or self._held(p)}
        if not watched:
            return
        derived = await self._derived(sorted(watched))
        moved = False
        for partition in sorted(watched):
            moved |= self._step(partition, derived, now)
        if moved:
            for lane in (*self.control, *([self.capture] if self.capture is not None else [])):
                lane.wake()

    def _step(self, partition: int, derived: Callable[[int, int], bool], now: float) -> bool:
        state = self._parts.setdefault(partition, _Partition())
        if not self._ready(partition):  # restoring: no lane of it may take anything, and no bound runs
            state.seen = dict.fromkeys(state.seen, now)
            state.settling_since = now
            return False
        still = {o for lane in self.control for o, _ in lane.marks(partition)}
        state.given_up &= still  # forgotten once every lane has handled it
        if state.taking is not None and state.taking[0] in state.given_up:
            state.taking = None
        moved = False
        if state.taking is not None and all(
                lane.done.get(partition, -1) > state.taking[0] for lane in self.control):
            state.settling = (state.taking[1], self._ticks)  # taken up by every control lane
            state.settling_since = now
            state.taking = None
            moved = True
        if state.settling is not None and state.settling[1] < self._ticks and (
                derived(partition, state.settling[0]) or now - state.settling_since >= CONTROL_WAIT_S):
            state.settling = None  # what it caused is derived (in a tick after it was taken up), or waited enough
            moved = True
        pending = self.pending(partition)
        state.seen = {o: t for o, t in state.seen.items() if pending is not None and o == pending[0]}
        if pending is None:
            state.taking = None
            return moved
        since = state.seen.setdefault(pending[0], now)
        if (state.taking != pending and state.settling is None
                and (derived(partition, pending[1]) or now - since >= CONTROL_WAIT_S)):
            state.taking = pending
            self.taken_up += 1
            moved = True
        if now - since >= GIVE_UP_S:
            state.given_up.add(pending[0])
            state.taking = None if state.taking == pending else state.taking
            log.error("control event of partition %d at offset %d has not been handled by every control lane "
                      "%.0f s after its partition was ready (a lane fails on it): the turns and the control events "
                      "after it are no longer held back", partition, pending[0], GIVE_UP_S)
            moved = True
        return moved

    async def _derived(self, partitions: list[int]) -> Callable[[int, int], bool]:
        """``derived(p, mark)``: capture has handled the turns of ``p`` before ``mark``, and every deriving lane
        has nothing of ``p`` queued or in flight and has handled all the log holds of it now."""
        # what the lanes have handled is read before the log's ends are asked: a batch that ends meanwhile
        # published outputs the ends may not count
        idle = {p: not any(lane.busy_with(p) for lane in self.deriving) for p in partitions}
        handled = {(i, p): await self._handled(lane, TopicPartition(lane.topic, p))
                   for i, lane in enumerate(self.deriving) for p in partitions}
        captured: dict[int, int] = {}
        if self.capture is not None:
            for p in partitions:
                captured[p] = await self._handled(self.capture, TopicPartition(self.capture.topic, p))
        tps = sorted({TopicPartition(lane.topic, p) for lane in self.deriving for p in partitions})  # embed and
        ends = await self._ends(tps) if tps else {}  # the deriving lane read the same topic: asked once
        caught_up = {p: idle[p] and all(handled[(i, p)] >= ends.get(TopicPartition(lane.topic, p), 0)
                                        for i, lane in enumerate(self.deriving)) for p in partitions}

        def derived(partition: int, mark: int) -> bool:
            return caught_up.get(partition, False) and (self.capture is None or captured.get(partition, -1) >= mark)

        return derived
