"""The Kafka runtime: the same processors and the writer as faust-streaming agents over Apache Kafka.

Each agent feeds batches of events (``stream.take_events``: up to ``ALTM_POLL_BATCH``, or what arrived within
``ALTM_WORKER_BATCH_WITHIN_S``) to the runtime-neutral drivers (:mod:`altm.pipeline._drivers`); outputs are sent
without awaiting each one and awaited together before the agent acknowledges its input, and the writer applies
a batch in one transaction per partition. Topics are created up front
(one partition count for all) before the worker starts; faust never declares topics itself. The faust web
server is off by default, and binds to loopback when on.

Settings chosen against faust's known stalls (documented in the README, "Kafka runtime"):

* ``stream_wait_empty=False`` — do not wait for every buffered event to be acked on rebalance;
* ``broker_session_timeout=60`` (``ALTM_WORKER_SESSION_TIMEOUT_S``), heartbeats every tenth of it,
  ``broker_rebalance_timeout=120`` and
  ``broker_max_poll_interval=300`` — slow batches (model calls) do not evict the worker from the group;
* ``consumer_auto_offset_reset="earliest"`` — a new group reads the log from the start;
* ``producer_acks=-1`` — outputs are acknowledged by all in-sync replicas before the input is acked.

Exactly-once effects come from the writer, not from faust: the writer stores the proposals offset in the
shard transaction and skips anything below it, and changes go through the shard's outbox.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import faust

from altm.bus import OutgoingRecord, Record, TopicPartition
from altm.bus.kafka import parse_broker_url, read_range
from altm.bus.sealing import Sealer
from altm.core import Settings, Topic, partition_for, topic_name
from altm.pipeline._drivers import StageDriver, WriterDriver, handle_until_done, until_done
from altm.pipeline._telemetry import consumer_lag
from altm.pipeline.processors import Processor, ProcessorContext
from altm.pipeline.writer import TextSimilarity, Writer
from altm.store import DeferredWork, ShardSet, shard_files
from altm.vectors import VectorIndex

Driver = StageDriver | WriterDriver


def agent_groups(stages: Sequence[StageDriver]) -> list[list[StageDriver]]:
    """The stages each agent runs: the deriving stages of the changes topic (fold, extract, link, verify,
    govern) together, so faust delivers each change once instead of five times and each stage takes what it
    wants of the batch; every other stage alone: embed (what makes a turn vector-searchable never waits behind
    derivation), capture, and the control stages (an erasure never waits behind a sweep). An idle stage (embed
    without an embedder) gets no agent: faust would deliver it every change for nothing."""
    stages = [s for s in stages if not s.processor.idle]
    derive = [s for s in stages if s.processor.input_topic is Topic.CHANGES and s.name != "embed"]
    return [*([derive] if derive else []), *([s] for s in stages if s not in derive)]


async def handle_together(drivers: Sequence[Driver], records: Sequence[Record]) -> None:
    """Each driver's ``handle_until_done`` on the same batch, side by side. When one ends with what is not
    retried (a cancellation), the others are cancelled and awaited before it propagates: a batch is never
    acknowledged while a stage of the group is still on it."""
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


def _record(message: Any, sealer: Sealer | None, drivers: Sequence[Driver]) -> Record:
    """faust's message as a record, opened when it is sealed and one of ``drivers`` wants it (``wants``)."""
    key = message.key
    record = Record(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=key.decode("utf-8") if isinstance(key, bytes) else key,
        value=message.value if isinstance(message.value, bytes) else bytes(message.value or b""),
        headers=tuple((k, bytes(v)) for k, v in (message.headers or ())),
        timestamp_ms=int((message.timestamp or 0) * 1000),
    )
    return sealer.open(record) if sealer is not None and any(d.wants(record) for d in drivers) else record


log = logging.getLogger("altm.worker")
RESTORE_CHUNK = 5000
"""Proposals read from the broker and applied in one transaction while a shard is restored."""
POSITION_WAIT_S = 10.0
"""How long a restore waits for the writer's fetch position before it restores up to the log's end instead."""


class FaustRuntime:
    """Builds the faust app over drivers; ``altm worker`` (wiring) runs it as a process."""

    def __init__(self, settings: Settings, shards: ShardSet, ctx: ProcessorContext,
                 processors: Sequence[Processor], identity: str, sealer: Sealer | None = None,
                 similarity: TextSimilarity | None = None, vectors: VectorIndex | None = None) -> None:
        if not settings.broker:
            raise ValueError("the Kafka runtime needs a broker (ALTM_BROKER or --broker kafka://HOST:PORT)")
        self.settings = settings
        self.sealer = sealer
        self.partitions = settings.partitions
        self.shards = shards
        self.work = DeferredWork(shards, settings)
        self.stages = [StageDriver(p, ctx, self.work, self._publish) for p in processors]
        keys = sealer.keys if sealer is not None else None
        self.writer = WriterDriver(Writer(shards, settings, keys, similarity), self.work, self._publish, identity,
                                   self._fetch_proposals)
        self._handled: dict[str, dict[tuple[str, int], int]] = {}  # stage → (topic, partition) → next to handle
        self._inputs: dict[str, str] = {}  # stage → its input topic
        self._ready: set[int] = set()  # proposal partitions restored since they were assigned (``_restored``)
        self._epochs: dict[int, int] = {}  # proposal partition → how many times it was revoked
        self.vectors = vectors  # this worker's own index: a dropped partition's points go with its shard
        self._unowned_since: dict[int, float] = {}  # partition with a shard here → since when not owned
        self.app = self._build_app()

    def _build_app(self) -> faust.App:
        s = self.settings
        app = faust.App(
            f"{s.topic_prefix}workers",
            broker=f"kafka://{parse_broker_url(s.broker or '')}",
            web_enabled=s.worker_web_enabled,
            web_bind=s.worker_web_host,
            web_host=s.worker_web_host,
            web_port=s.worker_web_port,
            datadir=str(Path(s.data_dir) / "faust"),
            store="memory://",
            topic_partitions=s.partitions,
            topic_allow_declare=False,
            topic_disable_leader=True,
            consumer_auto_offset_reset="earliest",
            stream_wait_empty=False,
            broker_session_timeout=s.worker_session_timeout_s,
            broker_heartbeat_interval=s.worker_session_timeout_s / 10,
            broker_rebalance_timeout=120.0,
            broker_max_poll_interval=300.0,
            broker_commit_every=100,
            broker_commit_interval=1.0,
            producer_acks=-1,
        )
        for group in agent_groups(self.stages):
            self._add_agent(app, group[0].processor.input_topic, "altm-" + "-".join(s.name for s in group), group)
        self._add_agent(app, Topic.PROPOSALS, "altm-writer", [self.writer])
        app.timer(1.0)(self._flush_owned)
        app.timer(2.0)(self._restore_owned)
        app.on_partitions_revoked.connect(self._revoked)
        if s.worker_drop_unowned_after_s is not None:
            app.timer(min(10.0, s.worker_drop_unowned_after_s))(self._drop_unowned)
        app.timer(5.0)(self._retry_deferred)
        app.timer(5.0)(self._observe_lag)
        return app

    def _topic(self, app: faust.App, topic: Topic) -> Any:
        return app.topic(
            topic_name(topic, self.settings.topic_prefix),
            key_serializer="raw",
            value_serializer="raw",
            partitions=self.partitions,
            internal=False,
        )

    async def _publish(self, records: Sequence[OutgoingRecord]) -> None:
        """Send every record, then wait for all acknowledgements (pipelined, in order per partition)."""
        pending = []
        for rec in records:
            if self.sealer is not None:
                rec = self.sealer.seal(rec)
            part = rec.partition
            if part is None:
                part = partition_for(rec.key, self.partitions) if rec.key is not None else 0
            pending.append(await self.app.producer.send(
                rec.topic, rec.key.encode("utf-8") if rec.key is not None else None, rec.value,
                partition=part, timestamp=None, headers=list(rec.headers) or None,
            ))
        for fut in pending:
            await fut

    def _add_agent(self, app: faust.App, topic: Topic, name: str, drivers: Sequence[Driver]) -> None:
        batch, within = self.settings.poll_batch, self.settings.worker_batch_within_s
        for driver in drivers:
            self._inputs[driver.name] = topic_name(topic, self.settings.topic_prefix)
        handled = [self._handled.setdefault(driver.name, {}) for driver in drivers]

        async def agent(stream: Any) -> AsyncIterator[None]:
            # up to ``poll_batch`` events, or what came within ``within`` seconds: one call of each driver (the
            # stages of a group side by side), outputs sent together, one writer transaction per partition; the
            # events are acknowledged once every driver has returned
            async for events in stream.take_events(batch, within=within):
                records = [_record(e.message, self.sealer, drivers) for e in events]
                if self.writer not in drivers:  # a stage reads the shard: not before the writer restored it
                    await self._restored_all(sorted({r.partition for r in records}))
                await handle_together(drivers, records)
                for done in handled:  # what the stages are done with (the lag gauge; faust may have fetched more)
                    for rec in records:
                        key = (rec.topic, rec.partition)
                        done[key] = max(done.get(key, 0), rec.offset + 1)
                yield None

        app.agent(self._topic(app, topic), name=name)(agent)

    async def _fetch_proposals(self, partition: int, start: int, end: int) -> list[Record]:
        """Proposals of one partition read from the broker (the shard's changelog: see ``WriterDriver``)."""
        records = await read_range(parse_broker_url(self.settings.broker or ""), self.writer.topic, partition,
                                   start, end, limit=RESTORE_CHUNK)
        return [self.sealer.open(r, retired=False) for r in records] if self.sealer is not None else records

    async def _restored(self, partition: int) -> None:
        """Once per assignment of ``partition``: its shard has applied every proposal the group had consumed
        when this worker got it (a worker with a data dir of its own may be given a partition another worker
        filled): up to the writer's fetch position, which starts at the group's committed offset (not the
        log's end: what is still in flight the writer applies as usual). Stages wait for it, so what they
        derive reads the whole shard, as on the worker that had it before."""
        if partition in self._ready:
            return
        epoch = self._epochs.get(partition, 0)
        tp = self._assigned(partition)
        if tp is None:  # not (or no longer) this worker's: nothing to restore, nothing to mark
            return
        end = await self._fetch_position(tp)
        if end is None:
            end = (await self.app.consumer.highwaters(tp)).get(tp)
        if end is not None and end > 0:
            await self.writer.catch_up(partition, int(end))
            await self.writer.flush(partition)
        # revoked meanwhile (and maybe given back after another worker wrote to it): restored again next time
        if self._epochs.get(partition, 0) == epoch and self._assigned(partition) is not None:
            self._ready.add(partition)

    async def _fetch_position(self, tp: Any) -> int | None:
        """The writer's fetch position in ``tp``, or None when the consumer has none within ``POSITION_WAIT_S``
        (faust's ``position`` waits until there is one, and the stages wait on the restore): then the restore
        goes up to the log's end, and what the writer's stream delivers again is skipped by its offset."""
        try:
            position = await asyncio.wait_for(self.app.consumer.position(tp), POSITION_WAIT_S)
        except TimeoutError:
            log.warning("no fetch position for %s[%d] within %.0f s: restoring it up to the log's end", tp.topic,
                        tp.partition, POSITION_WAIT_S)
            return None
        return None if position is None else int(position)

    def _assigned(self, partition: int) -> Any:
        """The proposals partition ``partition`` as faust's consumer has it assigned, or None."""
        return next((tp for tp in self.app.consumer.assignment()
                     if tp.topic == self.writer.topic and tp.partition == partition), None)

    async def _restored_all(self, partitions: Sequence[int]) -> None:
        """``_restored`` for each partition until it works (the broker away, a rebalance under way): a stage
        never derives from a shard that may miss what another worker applied."""
        async def restore() -> None:
            for partition in partitions:
                await self._restored(partition)

        await until_done(restore, f"restoring partitions {list(partitions)}")

    async def _restore_owned(self) -> None:
        """Restore the shards of the proposal partitions this worker owns before any record of theirs arrives:
        recall then finds those users' memories before any new turn of theirs comes."""
        try:
            for partition in sorted(self._owned(Topic.PROPOSALS) - self._ready):
                await self._restored(partition)
        except Exception:
            log.warning("restoring owned partitions from the log failed; the next tick tries again", exc_info=True)

    def _revoked(self, sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """faust's ``on_partitions_revoked(revoked)``: a partition that leaves this worker is restored again if
        it comes back (another worker may have written to it meanwhile)."""
        revoked = args[0] if args else kwargs.get("revoked", ())
        for tp in revoked:
            if tp.topic == self.writer.topic:
                self._ready.discard(tp.partition)
                self._epochs[tp.partition] = self._epochs.get(tp.partition, 0) + 1
                self._unowned_since.setdefault(tp.partition, time.monotonic())

    async def _drop_unowned(self) -> None:
        """Delete the shards (and their vector points) of partitions this worker has not owned for
        ``worker_drop_unowned_after_s``: with a data dir of its own, a copy it keeps of a partition another
        worker now owns would miss that worker's erasures."""
        try:
            after = self.settings.worker_drop_unowned_after_s
            if after is None:
                return
            owned = self._owned(Topic.PROPOSALS)
            now = time.monotonic()
            for partition in owned:
                self._unowned_since.pop(partition, None)
            for partition, _ in shard_files(Path(self.settings.data_dir)):
                if partition in owned or partition >= self.partitions:
                    continue
                since = self._unowned_since.setdefault(partition, now)
                if now - since >= after:
                    self._drop(partition)
        except Exception:
            log.warning("dropping unowned shards failed; the next tick tries again", exc_info=True)

    def _drop(self, partition: int) -> None:
        ids = self.shards.drop(partition)
        if self.vectors is not None and ids:
            self.vectors.delete(ids)
            self.vectors.flush()
        self._unowned_since.pop(partition, None)
        self._ready.discard(partition)
        log.info("dropped the shard of partition %d (%d memories): another worker owns it", partition, len(ids))

    def _owned(self, topic: Topic) -> set[int]:
        name = topic_name(topic, self.settings.topic_prefix)
        return {tp.partition for tp in self.app.consumer.assignment() if tp.topic == name}

    # The timers below run as faust app tasks: an exception escaping one would crash the worker (faust stops the
    # app), so a broker outage or a rebalance in the middle of one is logged and the next tick tries again.

    async def _retry_deferred(self) -> None:
        """Deferred work of the partitions this worker owns (workers may share a data dir)."""
        try:
            for stage in self.stages:
                await stage.retry_due(self._owned(stage.processor.input_topic))
            await self.writer.retry_due(self._owned(Topic.PROPOSALS))
        except Exception:
            log.warning("retrying deferred work failed; the next tick tries again", exc_info=True)

    async def _flush_owned(self) -> None:
        """Publish changes committed by an earlier run but not yet delivered, for the partitions whose
        proposals this worker owns (workers may share a data dir; each flushes only its own shards)."""
        try:
            await self.writer.flush_all(self._owned(Topic.PROPOSALS))
        except Exception:
            log.warning("flushing the outbox failed (is the broker reachable?); the next tick tries again",
                        exc_info=True)

    async def _observe_lag(self) -> None:
        """The consumer lag gauges per stage and assigned partition: the broker's high watermark minus what the
        stage has handled (before it handled anything there: minus the consumer's fetch position)."""
        try:
            consumer = self.app.consumer
            assigned = sorted(consumer.assignment())
            ends = await consumer.highwaters(*assigned) if assigned else {}
            for stage, topic in self._inputs.items():
                handled = self._handled.get(stage, {})
                lags: dict[TopicPartition, int] = {}
                for tp in (t for t in assigned if t.topic == topic and t in ends):
                    done = handled.get((tp.topic, tp.partition))
                    if done is None:
                        done = await consumer.position(tp)
                    if done is not None:
                        lags[TopicPartition(tp.topic, tp.partition)] = max(0, int(ends[tp]) - int(done))
                for key in [k for k in handled if TopicPartition(*k) not in lags]:
                    del handled[key]  # revoked: another worker's now
                consumer_lag(stage, lags)
        except Exception:  # a rebalance or an unreachable broker mid-way: the next tick measures again
            log.debug("measuring consumer lag failed", exc_info=True)
