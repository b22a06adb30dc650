"""The embedded runtime: every processor and the writer in one process over the embedded log.

It drives the runtime-neutral drivers (:mod:`altm.pipeline._drivers`) with one consumer per stage. It does
not own the stores: the deployment (wiring) opens and closes the log, the shards and the indexes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from altm.bus import Bus, Consumer, OutgoingRecord, Record, TopicPartition, host_record, marked
from altm.bus.sealing import KeyStore
from altm.core import Event, Settings, Topic, all_topic_specs, topic_name
from altm.pipeline._drivers import StageDriver, WriterDriver, next_offsets, wanted
from altm.pipeline._telemetry import consumer_lag
from altm.pipeline.processors import Processor, ProcessorContext
from altm.pipeline.runtime._order import FAR, ControlOrder, held
from altm.pipeline.writer import TextSimilarity, Writer
from altm.store import DeferredWork, ShardSet

log = logging.getLogger("altm.runtime")

EXPIRE_EVERY_S = 60.0
"""How often a running embedded pipeline removes the records past their topic's retention."""
LAG_EVERY_S = 1.0
"""How often a running runtime refreshes its consumer lag gauges."""

ProgressCallback = Callable[[str, int], None]


@dataclass
class StageMetrics:
    """Per-stage counters (records handled, seconds busy) for throughput figures."""

    records: int = 0
    busy_s: float = 0.0

    @property
    def per_s(self) -> float:
        return self.records / self.busy_s if self.busy_s > 0 else 0.0


class _Stage:
    """A driver and the consumer that feeds it."""

    def __init__(self, driver: StageDriver | WriterDriver, consumer: Consumer, poll_batch: int) -> None:
        self.driver = driver
        self.consumer = consumer
        self.poll_batch = poll_batch
        self.metrics = StageMetrics()
        self._held: dict[TopicPartition, int] = {}  # partitions held at a gate: where to read them again from

    @property
    def name(self) -> str:
        return self.driver.name

    @property
    def reads_turns(self) -> bool:
        return isinstance(self.driver, StageDriver) and self.driver.processor.input_topic is Topic.TURNS

    async def step(self, gates: dict[int, int] | None = None) -> int:
        """One poll batch, handled and committed; with ``gates``, the records of a partition at or past its gate
        are left for a later step (a partition held at its gate is not read: the others get the batch)."""
        records = await self._poll(gates or {})
        try:
            handled = await self.driver.handle(records)
            if records:  # outputs are published: commit the inputs (at-least-once)
                await self.consumer.commit(
                    {TopicPartition(t, p): off for (t, p), off in next_offsets(records).items()})
        except BaseException:
            await self._rewind(records)  # the next step reads the batch again: nothing is skipped
            raise
        return handled + await self.driver.retry_due()

    async def _poll(self, gates: dict[int, int]) -> list[Record]:
        paused = {tp: at for tp, at in self._held.items() if tp.partition in gates and at >= gates[tp.partition]}
        for tp in paused:
            await self.consumer.seek(tp, FAR)
        try:
            records = await self.consumer.poll(self.poll_batch)
        finally:
            for tp, at in paused.items():
                await self.consumer.seek(tp, at)
        records, back = held(records, gates)
        for tp, at in back.items():
            await self.consumer.seek(tp, at)
        self._held = {**paused, **back}
        return records

    def forget_held(self) -> None:
        """The consumer was sought elsewhere (a rewind): where it held partitions no longer holds."""
        self._held = {}

    async def _rewind(self, records: Sequence[Record]) -> None:
        first: dict[TopicPartition, int] = {}
        for rec in records:
            tp = TopicPartition(rec.topic, rec.partition)
            first[tp] = min(first.get(tp, rec.offset), rec.offset)
        for tp, offset in first.items():
            await self.consumer.seek(tp, offset)


class EmbeddedRuntime:
    """Drives processors and the writer over the embedded log in this process.

    Use ``run_until_idle()`` for batch work (ingest, tests) or ``start(background=True)`` to keep processing
    as events arrive; ``stop()`` ends the background task (no leaked tasks). Turns are made searchable
    first: capture, the writer and the embed stage run every step; the deriving stages (fold, extract, link,
    …) when those had nothing to do, or every ``derive_every_steps``. A control event that orders derivation
    (an erasure, a retention pass, …) is taken up once what was published before it is derived, and the turns
    published after it wait for it (:mod:`altm.pipeline.runtime._order`), as a replay applies them.
    """

    SEARCHABLE_PATH = frozenset({"capture", "writer", "embed"})

    def __init__(self, settings: Settings, log: Bus, shards: ShardSet, ctx: ProcessorContext,
                 processors: Sequence[Processor], keys: KeyStore | None = None,
                 similarity: TextSimilarity | None = None) -> None:
        self.settings = settings
        self.log = log
        self.keys = keys
        self.similarity = similarity
        self.shards = shards
        self.ctx = ctx
        self.work = DeferredWork(shards, settings)
        self._processors = list(processors)
        self._stages: list[_Stage] = []
        self._task: asyncio.Task[None] | None = None
        self._expired_at = 0.0
        self._stopping = asyncio.Event()
        self._started = False
        self._steps_since_derivation = 0
        self._lag_seen_at = 0.0
        self._order = ControlOrder(log, topic_name(Topic.CONTROL, settings.topic_prefix),
                                   {p.name for p in self._processors if p.input_topic is Topic.CONTROL},
                                   settings.poll_batch)

    @property
    def processor_names(self) -> list[str]:
        return [p.name for p in self._processors]

    async def start(self, *, background: bool = False) -> None:
        """Create the topics, bind every shard to this log and resume each stage where it stopped."""
        if self._started:
            return
        s = self.settings
        await self.log.ensure_topics(all_topic_specs(s.partitions, s.topic_prefix, s.dlq_retention_ms))
        await self._expire()
        stages = [
            _Stage(StageDriver(p, self.ctx, self.work, self._publish),
                   self.log.consumer(f"altm-{p.name}", [topic_name(p.input_topic, s.topic_prefix)],
                                     opens=partial(wanted, p)),
                   s.poll_batch)
            for p in self._processors
        ]
        writer = WriterDriver(Writer(self.shards, s, self.keys, self.similarity), self.work, self._publish,
                              await self.log.identity())
        writer_stage = _Stage(writer, self.log.consumer("altm-writer", [writer.topic]), s.poll_batch)
        for stage in [*stages, writer_stage]:
            await stage.consumer.start()
        await self._order.start()
        ends = await self.log.end_offsets(sorted(writer_stage.consumer.assignment()))
        for tp in sorted(writer_stage.consumer.assignment()):
            resume = writer.bind(tp.partition, ends[tp])
            if resume is None and ends[tp]:
                # the log has proposals of this partition and its shard no position: the shard was lost or
                # emptied (a failed copy or restore), so it is made again from the whole log (the writer's effects
                # are idempotent), never left empty from the group's committed offset on
                log.warning("shard of partition %d holds no position while the log has %d proposals for it: "
                            "applying them again from the start", tp.partition, ends[tp])
                resume = 0
            if resume is not None:
                await writer_stage.consumer.seek(tp, resume)  # the offset stored with the data wins
            await writer.flush(tp.partition)  # changes committed before a crash but not yet published
        self._stages = [*stages, writer_stage]
        self._started = True
        if background:
            self._stopping.clear()
            self._task = asyncio.create_task(self._loop(), name="altm-embedded-runtime")

    async def _publish(self, records: Sequence[OutgoingRecord]) -> None:
        await self.log.publish_many(records)

    async def stop(self) -> None:
        if self._task is not None:
            self._stopping.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for stage in self._stages:
            await stage.consumer.stop()
        await self._order.stop()
        self._stages = []
        self._started = False
        self._steps_since_derivation = 0

    async def publish(self, events: Sequence[Event]) -> None:
        """Publish host events (turns, control) to their topics, keyed by scope home (a control event that
        orders derivation marked with the turns before it)."""
        await self.log.publish_many(await marked(self.log, self.settings.topic_prefix,
                                                 [host_record(self.settings, ev) for ev in events]))

    async def rewind(self, processors: Sequence[str]) -> None:
        """Re-derivation: these processors read their input again from offset 0 (effects are idempotent)."""
        unknown = set(processors) - {s.name for s in self._stages}
        if unknown:
            raise ValueError(f"no such processor(s): {sorted(unknown)}")
        for stage in self._stages:
            if isinstance(stage.driver, StageDriver) and stage.name in processors:
                for tp in stage.consumer.assignment():
                    await stage.consumer.seek(tp, 0)
                stage.forget_held()

    async def step(self) -> int:
        """One poll batch per stage, the searchable path first (see the class docstring)."""
        total = 0
        gates = await self._order.gates(self._stages)
        for stage in self._stages:
            if stage.name in self.SEARCHABLE_PATH:
                total += await self._step_stage(stage, gates=gates if stage.reads_turns else None)
        self._steps_since_derivation += 1
        if total == 0 or self._steps_since_derivation >= self.settings.derive_every_steps:
            self._steps_since_derivation = 0
            for stage in self._stages:
                if stage.name not in self.SEARCHABLE_PATH and not self._order.controls(stage):
                    total += await self._step_stage(stage)
            total += await self._order.step_controls(self._stages, total == 0, self._step_control)
        if time.monotonic() - self._lag_seen_at >= LAG_EVERY_S:
            await self.lag()  # the consumer lag gauges, once a second at most
        return total

    async def _step_control(self, stage: _Stage, gates: dict[int, int]) -> int:
        return await self._step_stage(stage, gates=gates)

    @staticmethod
    async def _step_stage(stage: _Stage, *, gates: dict[int, int] | None = None) -> int:
        start = time.perf_counter()
        n = await stage.step(gates)
        if n:
            stage.metrics.records += n
            stage.metrics.busy_s += time.perf_counter() - start
        return n

    def stage_metrics(self) -> dict[str, StageMetrics]:
        return {stage.name: stage.metrics for stage in self._stages}

    async def lag(self) -> int:
        """Records not yet consumed over every stage (and the lag gauges per stage and partition)."""
        total = 0
        for stage in self._stages:
            lags = await stage.consumer.lags()
            consumer_lag(stage.name, lags)
            total += sum(lags.values())
        self._lag_seen_at = time.monotonic()
        return total

    async def run_until_idle(self, progress: ProgressCallback | None = None) -> int:
        """Process until every stage has consumed everything; returns the number of records handled.

        Deferred work that is not yet due (or keeps failing) does not keep the runtime busy; it is retried
        by later steps, and ``work.count()`` tells how much is waiting."""
        if self._task is not None:
            raise RuntimeError("run_until_idle() is for a runtime started without background=True")
        handled = 0
        while True:
            n = await self.step()
            handled += n
            if progress is not None and n:
                progress("records", n)
            if n == 0 and await self.lag() == 0:
                return handled
            # a step's awaits may all finish at once (SQLite work): yield, so a cancellation (Ctrl-C, a caller's
            # timeout) lands between steps, not once everything is derived
            await asyncio.sleep(0)

    async def _expire(self) -> None:
        """Records past their topic's retention (dead letters, ``ALTM_DLQ_RETENTION_MS``) leave the log, as a
        broker's log cleaner removes them on Kafka: when the runtime starts and every ``EXPIRE_EVERY_S`` of a
        running loop (the setting was written into the log and never applied)."""
        self._expired_at = time.monotonic()
        if (n := await self.log.expire()):
            log.info("removed %d records past their topic's retention", n)

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            if time.monotonic() - self._expired_at >= EXPIRE_EVERY_S:
                await self._expire()
            try:
                n = await self.step()
            except Exception:
                log.exception("embedded runtime step failed; retrying in 1s")
                await asyncio.sleep(1.0)
                continue
            if n == 0:
                # turns held back for a control event go on in the step after an idle one: no long sleep
                await self.log.wait_for_data(0.01 if self._order.holding else 0.25)
