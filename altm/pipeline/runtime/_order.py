"""The order of control events and turns in the embedded runtime (see :mod:`altm.bus._order`).

A control event that orders derivation carries the turns offset it comes before in its partition. While it is
pending, capture takes only the turns of that partition before that offset; the control stages take every
control event before it as they come, and it once the turns before it are derived (in a step in which no other
stage had anything to do); the turns after it wait until what it caused is derived too (an idle step after
it: *settling*). That is the order a replay applies them in. Nothing waits for ever: an event is taken up after
``CONTROL_WAIT_S`` without an idle step, the turns after it go on ``CONTROL_WAIT_S`` after it was taken up,
and an event its stages keep failing on gates no turn once it has been pending ``GIVE_UP_S``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from altm.bus import Bus, Consumer, Record, TopicPartition, turns_end

log = logging.getLogger("altm.runtime")

CONTROL_WAIT_S = 5.0
"""How long a control event that orders derivation waits, at most, for the turns before it to be derived (a step
in which no other stage had anything to do), and the turns after it for what it caused."""
GIVE_UP_S = 2 * CONTROL_WAIT_S
"""A pending event older than this (its stages keep failing on it) no longer holds turns back."""
SCAN_PAGES = 8
"""Pages of the control topic one step reads ahead at most per partition (the scan goes on in the next step)."""
FAR = 1 << 62
"""An offset past any log's end: a partition a consumer is sought there is not read."""


class OrderedStage(Protocol):
    """What the order needs of a stage: its name and its consumer."""

    @property
    def name(self) -> str: ...

    @property
    def consumer(self) -> Consumer: ...


S = TypeVar("S", bound=OrderedStage)


@dataclass
class _Scan:
    """What the read-ahead found in one partition of the control topic from ``start`` on."""

    start: int
    to: int  # read up to here (exclusive)
    found: tuple[int, int] | None = None  # (offset, turns end) of the first ordering event from ``start`` on


class ControlOrder:
    """Which turns capture may take (``gates``) and which control events the control stages may take."""

    def __init__(self, log: Bus, control_topic: str, control_stages: set[str], read_ahead: int) -> None:
        self.log = log
        self.control_topic = control_topic
        self.control_stages = control_stages
        self.read_ahead = read_ahead
        self._ahead: Consumer | None = None  # reads the control topic ahead of the control stages; never commits
        self._scans: dict[int, _Scan] = {}
        self._pending: dict[int, tuple[int, int]] = {}  # partition -> (offset, turns end) of its next event
        self._seen_at: dict[tuple[int, int], float] = {}  # (partition, offset) -> when it was first pending
        self._settling: dict[int, tuple[int, float]] = {}  # partition -> (turns end, since) of one taken up
        self._given_up: set[tuple[int, int]] = set()  # pending events that no longer hold turns back (logged)
        self.holding = False  # the last gates held turns back

    async def start(self) -> None:
        self._ahead = self.log.consumer("altm-control-order", [self.control_topic], opens=_headers_only)
        await self._ahead.start()

    async def stop(self) -> None:
        if self._ahead is not None:
            await self._ahead.stop()
            self._ahead = None

    def controls(self, stage: OrderedStage) -> bool:
        return stage.name in self.control_stages

    async def gates(self, stages: Sequence[OrderedStage]) -> dict[int, int]:
        """Per partition, the turns offset capture may not reach yet."""
        await self._refresh(stages)
        now = time.monotonic()
        out = {p: end for p, (end, _) in self._settling.items()}
        for p, (offset, end) in self._pending.items():
            if now - self._seen_at[(p, offset)] >= GIVE_UP_S:
                if (p, offset) not in self._given_up:
                    self._given_up.add((p, offset))
                    log.error("control event %s[%d]@%d has not been taken up for %.0f s (its stages fail on it): the "
                              "turns after it are no longer held back", self.control_topic, p, offset, GIVE_UP_S)
                continue
            out[p] = min(end, out.get(p, end))
        self.holding = bool(out)
        return out

    async def step_controls(self, stages: Sequence[S], idle: bool,
                            step: Callable[[S, dict[int, int]], Awaitable[int]]) -> int:
        """The control stages' part of a step (``idle``: no other stage had anything to do in it): every event
        before a partition's pending ordering event, and that one when it may be taken up."""
        now = time.monotonic()
        released = {p for p, (_, since) in self._settling.items() if idle or now - since >= CONTROL_WAIT_S}
        for p in released:  # what the event taken up there caused is derived (or it waited long enough)
            del self._settling[p]
        await self._refresh(stages)
        # an event is taken up in an idle step, but not in the one that let the turns after the event before it
        # go: those are captured (and derived) first
        ready = {p for p, (offset, _) in self._pending.items()
                 if (idle and p not in released) or now - self._seen_at[(p, offset)] >= CONTROL_WAIT_S}
        before = dict(self._pending)
        gates = {p: offset + 1 if p in ready else offset for p, (offset, _) in before.items()}
        handled = 0
        for stage in (s for s in stages if self.controls(s)):
            handled += await step(stage, gates)
        if ready:
            await self._refresh(stages)
            for p in ready:
                if self._pending.get(p) != before[p]:  # taken up by every control stage
                    self._settling[p] = (before[p][1], now)
        return handled

    async def _refresh(self, stages: Sequence[OrderedStage]) -> None:
        """``_pending``: per partition, the first ordering event at or after the slowest control stage's position."""
        controls = [s for s in stages if self.controls(s)]
        if not controls or self._ahead is None:
            return
        tps = sorted(self._ahead.assignment())
        ends = await self.log.end_offsets(tps)
        positions = dict(ends)
        for stage in controls:
            for tp, lag in (await stage.consumer.lags()).items():
                positions[tp] = min(positions.get(tp, ends[tp]), ends[tp] - lag)
        now = time.monotonic()
        pending: dict[int, tuple[int, int]] = {}
        for tp in tps:
            found = await self._first_ordering(tp, positions[tp], ends[tp])
            if found is not None:
                pending[tp.partition] = found
                self._seen_at.setdefault((tp.partition, found[0]), now)
        self._seen_at = {k: v for k, v in self._seen_at.items() if pending.get(k[0], (None,))[0] == k[1]}
        self._given_up &= set(self._seen_at)
        self._pending = pending

    async def _first_ordering(self, tp: TopicPartition, at: int, end: int) -> tuple[int, int] | None:
        """(offset, turns end) of the first ordering event of ``tp`` from ``at`` on, read ahead page by page
        (what was read before is not read again)."""
        if at >= end:
            self._scans.pop(tp.partition, None)
            return None
        scan = self._scans.get(tp.partition)
        if (scan is None or at < scan.start or (scan.found is not None and at > scan.found[0])
                or (scan.found is None and at > scan.to)):  # rewound, taken up, or read past what was scanned
            scan = self._scans[tp.partition] = _Scan(at, at)
        if scan.found is not None:
            return scan.found
        assert self._ahead is not None
        for _ in range(SCAN_PAGES):
            if scan.to >= end:
                break
            for other in self._ahead.assignment():
                await self._ahead.seek(other, scan.to if other == tp else FAR)
            page = [r for r in await self._ahead.poll(self.read_ahead) if r.partition == tp.partition]
            if not page:
                break
            for rec in page:
                marker = turns_end(rec)
                if marker is not None:
                    scan.found = (rec.offset, marker)
                    return scan.found
            scan.to = page[-1].offset + 1
        return None


def _headers_only(record: Record) -> bool:
    """The read-ahead needs the headers (in the clear) only: no record is opened."""
    return False


def held(records: Sequence[Record], gates: dict[int, int]) -> tuple[list[Record], dict[TopicPartition, int]]:
    """``records`` split at the gates: those before them, and per partition the offset to read again from."""
    kept: list[Record] = []
    back: dict[TopicPartition, int] = {}
    for rec in records:
        gate = gates.get(rec.partition)
        if gate is not None and rec.offset >= gate:
            tp = TopicPartition(rec.topic, rec.partition)
            back[tp] = min(rec.offset, back.get(tp, rec.offset))
        else:
            kept.append(rec)
    return kept, back
