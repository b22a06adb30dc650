"""The order of control events and turns in the embedded runtime (see :mod:`altm.bus._order`).

A control event that orders derivation carries the turns offset it comes before in its partition. While it is
pending, capture takes only the turns before that offset; the control stages take it up, one event at a time,
in a step in which no other stage had anything to do (everything before it derived); and the turns after it
wait until its consequences are derived too (an idle step after it: ``settling``). That is the order a replay
applies them in. Without such a step for ``CONTROL_WAIT_S`` the event is taken up anyway, and the turns after
it go on: under load that never lets the runtime idle nothing waits longer than that.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from altm.bus import Bus, Consumer, Record, TopicPartition, turns_end

CONTROL_WAIT_S = 5.0
"""How long control events that order derivation (and the turns after them) wait, at most, for a step in which
no other stage had anything to do."""


class OrderedStage(Protocol):
    """What the order needs of a stage: its name and its consumer."""

    @property
    def name(self) -> str: ...

    @property
    def consumer(self) -> Consumer: ...


S = TypeVar("S", bound=OrderedStage)


class ControlOrder:
    """Which turns capture may take (``gates``) and when the control stages take their next event."""

    def __init__(self, log: Bus, control_topic: str, control_stages: set[str], read_ahead: int) -> None:
        self.log = log
        self.control_topic = control_topic
        self.control_stages = control_stages
        self.read_ahead = read_ahead
        self._ahead: Consumer | None = None  # reads the control topic ahead of the control stages; never commits
        self._settling: dict[int, int] = {}  # partition -> turns end of an event taken up, not yet derived after
        self._pending: dict[int, int] = {}  # partition -> turns end of the first event there not yet taken up
        self._waiting_since: float | None = None  # since when a pending event waits for an idle step
        self._settling_since = 0.0  # when the last event was taken up

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
        self._pending = await self._pending_ends(stages)
        out = dict(self._settling)
        for partition, end in self._pending.items():
            out[partition] = min(end, out.get(partition, end))
        return out

    async def _pending_ends(self, stages: Sequence[OrderedStage]) -> dict[int, int]:
        """The turns end of the first control event of each partition that orders derivation and that some
        control stage has not taken up yet."""
        controls = [s for s in stages if self.controls(s)]
        if not controls or self._ahead is None:
            return {}
        behind: dict[TopicPartition, int] = {}
        for stage in controls:
            lags = await stage.consumer.lags()
            for tp, lag in lags.items():
                if lag > 0:
                    at = await stage.consumer.committed(tp) or 0
                    behind[tp] = min(at, behind.get(tp, at))
        if not behind:
            return {}
        for tp in self._ahead.assignment():
            await self._ahead.seek(tp, behind.get(tp, 1 << 62))
        out: dict[int, int] = {}
        for rec in await self._ahead.poll(self.read_ahead):
            end = turns_end(rec)
            if end is not None and rec.partition not in out:
                out[rec.partition] = end
        return out

    async def step_controls(self, stages: Sequence[S], idle: bool, step: Callable[[S, int | None], Awaitable[int]]
                            ) -> int:
        """The control stages' part of a step (``idle``: no other stage had anything to do in it)."""
        now = time.monotonic()
        if idle or now - self._settling_since >= CONTROL_WAIT_S:
            self._settling.clear()  # what the events taken up before caused is derived (or waited for enough)
        controls = [s for s in stages if self.controls(s)]
        self._pending = await self._pending_ends(stages)  # one may have come since the step began
        if not self._pending:
            self._waiting_since = None
            return sum([await step(s, None) for s in controls])
        if self._waiting_since is None:
            self._waiting_since = now
        if not idle and now - self._waiting_since < CONTROL_WAIT_S:
            return 0
        self._waiting_since = None
        before = dict(self._pending)
        handled = sum([await step(s, 1) for s in controls])  # all read the control topic from the same place
        self._pending = await self._pending_ends(stages)
        for partition, end in before.items():
            if self._pending.get(partition) != end:
                self._settling[partition] = end  # taken up: the turns after it wait for its consequences
                self._settling_since = now
        return handled


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
