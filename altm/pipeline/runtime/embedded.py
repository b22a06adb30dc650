"""The embedded runtime: every processor and the writer in one process over the embedded log."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType

from altm.bus import OutgoingRecord, TopicPartition
from altm.bus.embedded import EmbeddedConsumer, EmbeddedLog, default_log_path
from altm.core import Event, encode
from altm.core.settings import Settings
from altm.core.topics import Topic, all_topic_specs, topic_name
from altm.models import LLMSettings, Stage
from altm.pipeline._stage import DeferredQueue, host_record, next_offsets, run_records
from altm.pipeline.processors import Processor, ProcessorContext, default_processors
from altm.pipeline.runtime._resources import RuntimeResources, build_resources
from altm.pipeline.writer import Writer
from altm.store import ShardSet

log = logging.getLogger("altm.runtime")

# A turn can be recalled once it is captured, written (word indexes) and embedded (vector index).
SEARCHABLE_PATH = frozenset({"capture", "writer", "embed"})

ProgressCallback = Callable[[str, int], None]


@dataclass
class StageMetrics:
    """Per-stage counters (records handled, seconds busy) for throughput figures."""

    records: int = 0
    busy_s: float = 0.0

    @property
    def per_s(self) -> float:
        return self.records / self.busy_s if self.busy_s > 0 else 0.0


class _ProcessorStage:
    def __init__(self, processor: Processor, runtime: EmbeddedRuntime) -> None:
        self.processor = processor
        self.runtime = runtime
        self.name = processor.name
        self.metrics = StageMetrics()
        topic = topic_name(processor.input_topic, runtime.settings.topic_prefix)
        self.consumer = EmbeddedConsumer(runtime.log, f"altm-{processor.name}", [topic])

    async def start(self) -> None:
        await self.consumer.start()

    async def step(self) -> int:
        records = await self.consumer.poll(self.runtime.settings.poll_batch)
        handled = 0
        if records:
            result = await run_records(self.processor, records, self.runtime.ctx)
            for rec, reason in result.deferred:
                self.runtime.deferred.add(self.name, rec, reason)
            await self.runtime.log.publish_many(result.outgoing)  # publish before commit: at-least-once
            await self.consumer.commit(
                {TopicPartition(t, p): off for (t, p), off in next_offsets(records).items()}
            )
            handled = len(records)
        return handled + await self._retry_deferred()

    async def _retry_deferred(self) -> int:
        done = 0
        for work_id, rec in self.runtime.deferred.due(self.name):
            result = await run_records(self.processor, [rec], self.runtime.ctx)
            if result.deferred:
                self.runtime.deferred.add(self.name, rec, result.deferred[0][1])
                continue
            await self.runtime.log.publish_many(result.outgoing)
            self.runtime.deferred.done(work_id, rec.partition)
            done += 1
        return done


class _WriterStage:
    name = "writer"

    def __init__(self, runtime: EmbeddedRuntime) -> None:
        self.runtime = runtime
        self.topic = topic_name(Topic.PROPOSALS, runtime.settings.topic_prefix)
        self.writer = Writer(runtime.shards, runtime.settings)
        self.consumer = EmbeddedConsumer(runtime.log, "altm-writer", [self.topic])
        self.metrics = StageMetrics()

    async def start(self) -> None:
        await self.consumer.start()
        for tp in sorted(self.consumer.assignment()):
            resume = self.writer.resume_offset(tp.topic, tp.partition)
            if resume is not None:
                await self.consumer.seek(tp, resume)  # the offset stored with the data wins
            await self.flush(tp.partition)  # changes committed before a crash but not yet published

    async def flush(self, partition: int) -> None:
        shard = self.runtime.shards.get(partition)
        while pending := shard.pending_outbox():
            await self.runtime.log.publish_many(
                [OutgoingRecord(topic, value, key=key) for _, topic, key, value in pending]
            )
            shard.mark_published(pending[-1][0])

    async def step(self) -> int:
        records = await self.consumer.poll(self.runtime.settings.poll_batch)
        if not records:
            return await self._retry_deferred()
        n = self.runtime.settings.partitions
        for rec in records:
            outcome = self.writer.apply(rec, n)
            if outcome.deferred_reason is not None:  # fail closed: kept and retried, never accepted
                self.runtime.deferred.add(self.name, rec, outcome.deferred_reason)
        for partition in sorted({r.partition for r in records}):
            await self.flush(partition)
        await self.consumer.commit(
            {TopicPartition(t, p): off for (t, p), off in next_offsets(records).items()}
        )
        return len(records) + await self._retry_deferred()

    async def _retry_deferred(self) -> int:
        done = 0
        for work_id, rec in self.runtime.deferred.due(self.name):
            outcome = self.writer.apply(rec, self.runtime.settings.partitions, retry=True)
            if outcome.deferred_reason is not None:
                self.runtime.deferred.add(self.name, rec, outcome.deferred_reason)
                continue
            self.runtime.deferred.done(work_id, rec.partition)
            await self.flush(rec.partition)
            done += 1
        return done


class EmbeddedRuntime:
    """Drives processors and the writer over the embedded log in this process.

    Use ``run_until_idle()`` for batch work (ingest, tests) or ``start(background=True)`` to keep processing
    as events arrive; ``stop()`` ends the background task and closes every store (no leaked tasks).
    """

    def __init__(
        self,
        settings: Settings,
        processors: Sequence[Processor] | None = None,
        *,
        llm_settings: dict[Stage, LLMSettings] | None = None,
    ) -> None:
        self.settings = settings
        self.log = EmbeddedLog(default_log_path(settings.data_dir))
        self.shards = ShardSet(settings.data_dir, settings.partitions)
        self.deferred = DeferredQueue(self.shards, settings)
        self._llm_settings = llm_settings
        self._resources: RuntimeResources | None = None
        self._processors = list(processors) if processors is not None else default_processors()
        self._stages: list[_ProcessorStage | _WriterStage] = []
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._started = False
        self._steps_since_derivation = 0

    @property
    def resources(self) -> RuntimeResources:
        if self._resources is None:
            raise RuntimeError("the runtime is not started")
        return self._resources

    @property
    def ctx(self) -> ProcessorContext:
        return self.resources.ctx

    async def start(self, *, background: bool = False) -> None:
        if self._started:
            return
        await self.log.start()
        try:
            await self.log.ensure_topics(
                all_topic_specs(self.settings.partitions, self.settings.topic_prefix,
                                self.settings.dlq_retention_ms)
            )
            self._resources = build_resources(self.settings, self.shards, self._llm_settings)
            self._stages = [_ProcessorStage(p, self) for p in self._processors]
            self._stages.append(_WriterStage(self))
            for stage in self._stages:
                await stage.start()
        except BaseException:
            await self._close_stores()
            raise
        self._started = True
        if background:
            self._stopping.clear()
            self._task = asyncio.create_task(self._loop(), name="altm-embedded-runtime")

    async def stop(self) -> None:
        if self._task is not None:
            self._stopping.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._started:
            await self._close_stores()
            self._started = False
        self._steps_since_derivation = 0

    async def _close_stores(self) -> None:
        if self._resources is not None:
            await self._resources.close()
            self._resources = None
        self.shards.close()
        await self.log.stop()

    async def __aenter__(self) -> EmbeddedRuntime:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def publish(self, events: Sequence[Event]) -> None:
        """Publish host events (turns, control) to their topics, keyed by scope home."""
        await self.log.publish_many([host_record(self.settings, ev) for ev in events])

    async def sweep(self, limit: int = 500) -> int:
        """Verify L2 rows that were never verified or changed after their verdict, independent of reads.
        Returns how many rows were queued for verification (their verdicts go through the writer)."""
        from altm.core import ChangeEvent, ChangeStatus, ProposalOp, derive_id
        from altm.pipeline.processors import VerifyProcessor
        from altm.store import row_to_memory

        verify = next((p for p in self._processors if isinstance(p, VerifyProcessor)), VerifyProcessor())
        out: list[OutgoingRecord] = []
        swept = 0
        for shard in self.shards.existing():
            rows = shard.conn.execute(
                "SELECT m.* FROM memories m WHERE m.layer = 'L2' AND m.superseded_by IS NULL AND "
                "(m.trust_verified_at IS NULL OR EXISTS (SELECT 1 FROM audit_log a WHERE a.target_table = "
                "'memories' AND a.target_id = m.memory_id AND a.actor NOT IN ('verify', 'review') "
                "AND a.at > m.trust_verified_at)) ORDER BY m.valid_from, m.memory_id LIMIT ?", (limit,)).fetchall()
            for row in rows:
                mem = row_to_memory(dict(row))
                change = ChangeEvent(event_id=derive_id("sweep", mem.memory_id, mem.content_hash), scope=mem.scope,
                                     timestamp=mem.valid_from or datetime.now(UTC), proposal_id="sweep",
                                     op=ProposalOp.UPSERT_MEMORY, status=ChangeStatus.COMMITTED,
                                     memory_id=mem.memory_id, layer=mem.layer, kind=mem.kind, memory=mem)
                for prop in await verify.process(change, self.ctx):
                    out.append(OutgoingRecord(topic_name(Topic.PROPOSALS, self.settings.topic_prefix),
                                              encode(prop), key=prop.key))
                swept += 1
        await self.log.publish_many(out)
        return swept

    def retention_candidates(self, now: datetime | None = None) -> list[dict[str, object]]:
        """Memories past their layer's retention (``ALTM_RETENTION_DAYS_L0..L4``), pinned ones excepted."""
        now = now or datetime.now(UTC)
        out: list[dict[str, object]] = []
        for layer in ("L0", "L1", "L2", "L3", "L4"):
            days = getattr(self.settings, f"retention_days_{layer.lower()}")
            if days is None:
                continue
            cutoff = (now - timedelta(days=days)).isoformat()
            for shard in self.shards.existing():
                out += [dict(r) for r in shard.conn.execute(
                    "SELECT memory_id, tenant_id, workspace_id, user_id, agent_id, layer, kind, content, valid_from "
                    "FROM memories WHERE layer = ? AND valid_from < ? AND lc_pinned = 0 AND superseded_by IS NULL "
                    "ORDER BY valid_from, memory_id", (layer, cutoff))]
        return out

    async def retention(self, now: datetime | None = None) -> int:
        """Forget what is past retention: the decision goes on the control topic (so a replay repeats it) and
        the writer applies it (audit with the removed value, evidence repaired, tombstones when
        ``ALTM_RETENTION_TOMBSTONES``). Returns how many memories were named."""
        candidates = self.retention_candidates(now)
        by_scope: dict[tuple[str, str, str, str], list[str]] = {}
        for c in candidates:
            key = (str(c["tenant_id"]), str(c["workspace_id"]), str(c["user_id"]), str(c["agent_id"]))
            by_scope.setdefault(key, []).append(str(c["memory_id"]))
        await self._lifecycle_pass(now, {k: {"op": "forget", "memory_ids": v, "reason": "past retention",
                                             "tombstone": self.settings.retention_tombstones}
                                         for k, v in by_scope.items()})
        return len(candidates)

    async def _lifecycle_pass(self, now: datetime | None, payloads: dict[tuple[str, str, str, str],
                                                                      dict[str, object]]) -> None:
        from altm.core import ControlAction, ControlEvent, Scope, derive_id

        stamp = now or datetime.now(UTC)
        events = []
        for (t, w, u, a), payload in sorted(payloads.items()):
            scope = Scope(tenant_id=t, workspace_id=w, user_id=u, agent_id=a)
            events.append(ControlEvent(
                event_id=derive_id("ctl", scope.path, "lifecycle", str(payload["op"]), stamp.isoformat()),
                scope=scope, timestamp=stamp, action=ControlAction.LIFECYCLE, payload=payload))
        await self.publish(events)

    def compaction_candidates(self, now: datetime | None = None) -> list[dict[str, object]]:
        """Memories whose compression level should change (idle time since their last use or validity)."""
        from altm.pipeline.lifecycle_rules import LifecycleRules

        rules = LifecycleRules()
        now = now or datetime.now(UTC)
        out: list[dict[str, object]] = []
        for shard in self.shards.existing():
            for r in shard.conn.execute(
                "SELECT m.memory_id, m.tenant_id, m.workspace_id, m.user_id, m.agent_id, m.layer, m.valid_from, "
                "m.lc_pinned, m.lc_compression, (SELECT MAX(at) FROM lifecycle_signals s WHERE s.memory_id = "
                "m.memory_id AND s.kind IN ('cited_by_agent', 'helpful')) AS last_use FROM memories m "
                "WHERE m.superseded_by IS NULL AND m.valid_from IS NOT NULL ORDER BY m.valid_from, m.memory_id"
            ):
                since = max(str(r["valid_from"]), str(r["last_use"] or ""))
                idle = (now - datetime.fromisoformat(since)).total_seconds() / 86400
                level = rules.compression_level(idle, pinned=bool(r["lc_pinned"]))
                if level != r["lc_compression"]:
                    out.append({**dict(r), "level": level, "idle_days": round(idle, 1)})
        return out

    async def compaction(self, now: datetime | None = None) -> int:
        """Move idle memories down compression levels (C1..C4): a decision on the control topic the
        lifecycle processor turns into signals for the writer. Returns how many levels change."""
        candidates = self.compaction_candidates(now)
        by_scope: dict[tuple[str, str, str, str], dict[str, int]] = {}
        for c in candidates:
            key = (str(c["tenant_id"]), str(c["workspace_id"]), str(c["user_id"]), str(c["agent_id"]))
            by_scope.setdefault(key, {})[str(c["memory_id"])] = int(str(c["level"]))
        await self._lifecycle_pass(now, {k: {"op": "compress", "levels": v} for k, v in by_scope.items()})
        return len(candidates)

    async def rewind(self, processors: Sequence[str]) -> None:
        """Re-derivation: these processors read their input again from offset 0 (effects are idempotent)."""
        unknown = set(processors) - {s.name for s in self._stages}
        if unknown:
            raise ValueError(f"no such processor(s): {sorted(unknown)}")
        for stage in self._stages:
            if isinstance(stage, _ProcessorStage) and stage.name in processors:
                for tp in stage.consumer.assignment():
                    await stage.consumer.seek(tp, 0)

    async def step(self) -> int:
        """One poll batch per stage. The stages that make a turn searchable run every step; the deriving
        stages (fold, extract, link, …) when those had nothing to do, or every ``derive_every_steps``."""
        total = 0
        for stage in self._stages:
            if stage.name in SEARCHABLE_PATH:
                total += await self._step_stage(stage)
        self._steps_since_derivation += 1
        if total == 0 or self._steps_since_derivation >= self.settings.derive_every_steps:
            self._steps_since_derivation = 0
            for stage in self._stages:
                if stage.name not in SEARCHABLE_PATH:
                    total += await self._step_stage(stage)
        return total

    @staticmethod
    async def _step_stage(stage: _ProcessorStage | _WriterStage) -> int:
        start = time.perf_counter()
        n = await stage.step()
        if n:
            stage.metrics.records += n
            stage.metrics.busy_s += time.perf_counter() - start
        return n

    def stage_metrics(self) -> dict[str, StageMetrics]:
        return {stage.name: stage.metrics for stage in self._stages}

    async def lag(self) -> int:
        total = 0
        for stage in self._stages:
            total += await stage.consumer.lag()
        return total

    async def run_until_idle(self, progress: ProgressCallback | None = None) -> int:
        """Process until every stage has consumed everything; returns the number of records handled.

        Deferred work that is not yet due (or keeps failing) does not keep the runtime busy; it is retried
        by later steps, and ``deferred.count()`` tells how much is waiting."""
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

    async def _loop(self) -> None:
        next_sweep = time.monotonic() + self.settings.sweep_interval_s
        while not self._stopping.is_set():
            try:
                n = await self.step()
                if time.monotonic() >= next_sweep:
                    await self.sweep()
                    next_sweep = time.monotonic() + self.settings.sweep_interval_s
            except Exception:
                log.exception("embedded runtime step failed; retrying in 1s")
                await asyncio.sleep(1.0)
                continue
            if n == 0:
                await self.log.wait_for_data(0.25)
