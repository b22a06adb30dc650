"""A lane: drivers that take the same records of one input topic, one batch at a time, in offset order per
partition; what it has handled (``done``) is what the worker may commit for it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence

from altm.bus import Record
from altm.core import Topic
from altm.pipeline._drivers import StageDriver, WriterDriver, handle_until_done

Driver = StageDriver | WriterDriver
Opener = Callable[[Record, Sequence[Driver]], Record]
"""The record as the drivers get it: opened when it is sealed and one of them wants it (see ``Driver.wants``)."""
Gate = Callable[[int], int | None]
"""The offset of a partition the lane may not reach yet, or None (see :mod:`._order`)."""
Hold = Callable[[], Awaitable[dict[int, int] | None]]
"""Awaited before a batch is taken; may return gates for that batch alone (partition -> offset not reached)."""
Marker = Callable[[Record], int | None]

log = logging.getLogger("altm.worker")
FIRST_RETRY_S = 0.5
HELD_WAIT_S = 0.05
"""How long an idle lane with records held back by gates waits before it looks at them again (the control order
also wakes it when a gate moves)."""
MAX_RETRY_S = 30.0


def lanes_of(stages: Sequence[StageDriver]) -> list[list[StageDriver]]:
    """The stages each lane runs: the deriving stages of the changes topic (fold, extract, link, verify,
    govern) together, so each change is fetched, queued and decoded once for all five and each stage takes
    what it wants of the batch; every other stage alone: embed (what makes a turn vector-searchable never waits
    behind derivation), capture, and the control stages (an erasure never waits behind a sweep). An idle stage
    (embed without an embedder) gets no lane: it would be handed every change for nothing."""
    stages = [s for s in stages if not s.processor.idle]
    derive = [s for s in stages if s.processor.input_topic is Topic.CHANGES and s.name != "embed"]
    return [*([derive] if derive else []), *([s] for s in stages if s not in derive)]


async def handle_together(drivers: Sequence[Driver], records: Sequence[Record]) -> None:
    """Each driver's ``handle_until_done`` on the same batch, side by side. When one ends with what is not
    retried (a cancellation), the others are cancelled and awaited before it propagates: a batch is never
    counted as handled while a driver of the lane is still on it."""
    if len(drivers) == 1:
        await handle_until_done(drivers[0], records)
        return
    tasks = [asyncio.ensure_future(handle_until_done(driver, records)) for driver in drivers]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Lane:
    """Records of one topic queued per partition by the worker's fetch loop, handled by the lane's drivers in
    batches of up to ``batch`` records. ``ready(partition)`` says whether a partition may be handled yet (a stage
    reads the shard: not before the writer restored it); ``wake()`` says that may have changed.

    ``done[p]`` is the offset after the last record of partition p the lane has handled; it only moves once a
    batch's every driver has returned (its outputs published). ``settle`` and ``forget`` are the lane's part of a
    rebalance: no batch of a revoked partition is in flight or starts, and nothing it queued is kept."""

    def __init__(self, topic: str, drivers: Sequence[Driver], *, batch: int, opener: Opener,
                 ready: Callable[[int], bool], hold: Hold | None = None, gate: Gate | None = None,
                 marker: Marker | None = None, emptied: Callable[[Lane], None] | None = None) -> None:
        self.topic = topic
        self.drivers = list(drivers)
        self.name = "+".join(d.name for d in self.drivers)
        self.batch = batch
        self._open = opener
        self._ready = ready
        self._hold = hold  # awaited before each batch: a lane that yields to others (see the runtime)
        self._gate = gate  # per partition, the offset the lane may not reach yet (the control order)
        self._marker = marker  # which records are marks (see ``first_mark``)
        self._emptied = emptied  # called after a batch that left nothing queued
        self._marks: dict[int, deque[tuple[int, int]]] = {}  # partition -> (offset, mark) of records not handled
        self._held_back = False  # the last take left records queued behind its hold's gates
        self.batches = 0  # batches handled
        self.progressed = asyncio.Event()  # set after each batch handled
        self._queues: dict[int, deque[Record]] = {}
        self.done: dict[int, int] = {}
        self._closing: set[int] = set()
        self._wake = asyncio.Event()
        self._current: asyncio.Future[None] | None = None
        self._current_parts: frozenset[int] = frozenset()
        self._abandoned = False  # the batch in flight was cancelled by a rebalance or a stop (not by a driver)
        self._parked: dict[int, tuple[float, float]] = {}  # partition → (retry at, next delay): cannot open
        self._task: asyncio.Task[None] | None = None
        self._turn = 0  # which partition a batch starts with (no partition waits behind a busy one)

    # the fetch loop's side

    def put(self, partition: int, records: Sequence[Record]) -> None:
        if partition in self._closing:
            return
        self._queues.setdefault(partition, deque()).extend(records)
        if self._marker is not None:
            for rec in records:
                mark = self._marker(rec)
                if mark is not None:
                    self._marks.setdefault(partition, deque()).append((rec.offset, mark))
        self._wake.set()

    def queued(self, partition: int) -> int:
        queue = self._queues.get(partition)
        return len(queue) if queue else 0

    def backlog(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def takeable(self) -> int:
        """Records the lane could take now: of partitions that are ready, not parked and not being given up, before
        their gates."""
        now = time.monotonic()
        return sum(self._below(q, self._gate_of(p)) for p, q in self._queues.items() if self._takes(p, now))

    def idle(self) -> bool:
        """Nothing queued and no batch in flight."""
        return self._current is None and not self.backlog()

    def busy_with(self, partition: int) -> bool:
        """Whether the lane has records of ``partition`` queued or a batch of it in flight."""
        return partition in self._current_parts or self.queued(partition) > 0

    def marks(self, partition: int) -> Sequence[tuple[int, int]]:
        """(offset, mark) of the records of ``partition`` the lane has queued or in flight that ``marker`` marks,
        in offset order."""
        marks = self._marks.get(partition)
        if not marks:
            return ()
        done = self.done.get(partition)
        while marks and done is not None and marks[0][0] < done:
            marks.popleft()
        return marks

    def first_mark(self, partition: int) -> tuple[int, int] | None:
        """The first of ``marks``, or None."""
        marks = self.marks(partition)
        return marks[0] if marks else None

    def wake(self) -> None:
        self._wake.set()

    # lifecycle

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"altm-lane-{self.name}")

    async def stop(self, timeout_s: float) -> None:
        """Let the batch in flight finish (cancelled after ``timeout_s``), then end the lane's task."""
        self._closing.update(self._queues)
        await self._finish_current(lambda parts: True, timeout_s)
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None

    # a rebalance

    async def settle(self, partitions: Iterable[int], timeout_s: float) -> None:
        """Start no batch of ``partitions`` and wait for the one in flight that has records of them (cancelled
        after ``timeout_s``: not done, so not committed; the new owner handles it again)."""
        revoked = set(partitions)
        self._closing |= revoked
        await self._finish_current(lambda parts: bool(parts & revoked), timeout_s)

    def forget(self, partitions: Iterable[int]) -> None:
        """Drop what ``partitions`` queued and what was handled of them (their next owner starts from what was
        committed); the partitions may be given back later."""
        partitions = list(partitions)
        for partition in partitions:
            self._queues.pop(partition, None)
            self._marks.pop(partition, None)
            self.done.pop(partition, None)
            self._parked.pop(partition, None)
            self._closing.discard(partition)
        for driver in self.drivers:
            if isinstance(driver, StageDriver):
                driver.processor.forget_partitions(partitions)

    async def _finish_current(self, touches: Callable[[frozenset[int]], bool], timeout_s: float) -> None:
        current = self._current
        if current is None or current.done() or not touches(self._current_parts):
            return
        finished, _ = await asyncio.wait([current], timeout=timeout_s)
        if not finished:
            log.warning("lane %s: a batch of partitions %s did not finish within %.0f s of a rebalance or stop; "
                        "cancelled, it is handled again from the committed offsets", self.name,
                        sorted(self._current_parts), timeout_s)
            self._abandoned = True
            current.cancel()
            await asyncio.wait([current])

    # the lane's task

    def _takes(self, partition: int, now: float) -> bool:
        parked = self._parked.get(partition)
        return partition not in self._closing and (parked is None or parked[0] <= now) and self._ready(partition)

    def _gate_of(self, partition: int, extra: dict[int, int] | None = None) -> int | None:
        gates = [g for g in ((self._gate(partition) if self._gate is not None else None),
                             (extra.get(partition) if extra else None)) if g is not None]
        return min(gates, default=None)

    @staticmethod
    def _below(queue: deque[Record], gate: int | None) -> int:
        """How many of ``queue``'s records come before ``gate``."""
        if gate is None or not queue or queue[-1].offset < gate:
            return len(queue)
        return sum(1 for rec in queue if rec.offset < gate)

    def _take(self, extra: dict[int, int] | None = None) -> list[Record]:
        now = time.monotonic()
        parts = sorted(p for p, q in self._queues.items() if q and self._takes(p, now))
        gates = {p: self._gate_of(p, extra) for p in parts}
        self._held_back = any(g is not None and self._queues[p][0].offset >= g for p, g in gates.items())
        parts = [p for p in parts if gates[p] is None or self._queues[p][0].offset < (gates[p] or 0)]
        if not parts:
            return []
        self._turn = (self._turn + 1) % len(parts)
        out: list[Record] = []
        for partition in parts[self._turn:] + parts[:self._turn]:
            queue, gate = self._queues[partition], gates[partition]
            while queue and len(out) < self.batch and (gate is None or queue[0].offset < gate):
                out.append(queue.popleft())
            self._held_back = self._held_back or bool(queue and gate is not None and queue[0].offset >= gate)
        return out

    def _opened(self, records: Sequence[Record]) -> tuple[list[Record], list[Record]]:
        """The records as the drivers get them. A partition with a record that cannot be opened (sealed with a
        key store that is not this log's) goes back to its queue and is parked, doubling its pause each time:
        it stops there, loudly, and the other partitions go on. Returns the records kept (as read) and opened."""
        by_partition: dict[int, list[Record]] = {}
        for rec in records:
            by_partition.setdefault(rec.partition, []).append(rec)
        kept: list[Record] = []
        out: list[Record] = []
        for partition, recs in by_partition.items():
            try:
                out += [self._open(r, self.drivers) for r in recs]
                kept += recs
            except Exception:
                delay = self._parked.get(partition, (0.0, FIRST_RETRY_S))[1]
                log.exception("lane %s cannot open a record of partition %d; it waits %.1f s and tries again",
                              self.name, partition, delay)
                self._requeue(recs)
                self._parked[partition] = (time.monotonic() + delay, min(MAX_RETRY_S, delay * 2))
            else:
                self._parked.pop(partition, None)
        return kept, out

    async def _idle(self) -> None:
        """Until something is put or woken, or the first parked partition may be tried again (or, with records
        held back by gates, ``HELD_WAIT_S``: what holds them is looked at again)."""
        self._wake.clear()
        retry = min((at for p, (at, _) in self._parked.items() if p not in self._closing), default=None)
        if self._held_back:
            retry = min(retry if retry is not None else math.inf, time.monotonic() + HELD_WAIT_S)
        if retry is None:
            await self._wake.wait()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.0, retry - time.monotonic()))

    async def _run(self) -> None:
        delay = FIRST_RETRY_S
        while True:
            extra = await self._hold() if self._hold is not None and self.takeable() else None
            taken, records = self._opened(self._take(extra))
            if not records:
                await self._idle()
                continue
            self._current_parts = frozenset(r.partition for r in records)
            self._abandoned = False
            self._current = asyncio.ensure_future(self._handle(records))
            try:
                await self._current
                delay = FIRST_RETRY_S
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # the lane is stopping
                if not self._abandoned:  # a driver's own cancellation (a producer future cancelled under it):
                    await self._failed(taken, delay)  # the batch is not done: again, from its first record
                    delay = min(MAX_RETRY_S, delay * 2)
                else:  # a rebalance waited too long for it: not done; what it held of partitions that are kept
                    self._requeue(taken)  # goes back (the others are being given up: their next owner reads them)
            except Exception:  # not a driver's (they retry what fails): the batch goes back to the front
                await self._failed(taken, delay)
                delay = min(MAX_RETRY_S, delay * 2)
            finally:
                self._current = None
                self._current_parts = frozenset()

    async def _failed(self, records: Sequence[Record], delay: float) -> None:
        log.error("lane %s failed on a batch of %d record(s); it is handled again in %.1f s", self.name,
                  len(records), delay, exc_info=True)
        self._requeue(records)
        await asyncio.sleep(delay)

    def _requeue(self, records: Sequence[Record]) -> None:
        for rec in reversed(records):
            if rec.partition not in self._closing:
                self._queues.setdefault(rec.partition, deque()).appendleft(rec)

    async def _handle(self, records: Sequence[Record]) -> None:
        await handle_together(self.drivers, records)
        for rec in records:  # handled, outputs published: the worker may commit past these (a settling
            # rebalance waits for exactly this)
            self.done[rec.partition] = max(self.done.get(rec.partition, 0), rec.offset + 1)
        self.batches += 1
        self.progressed.set()
        if self._emptied is not None and not self.backlog():
            self._emptied(self)
