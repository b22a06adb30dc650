"""The Kafka runtime: the same processors and the writer as faust-streaming agents over Apache Kafka.

Topics are created up front (one partition count for all) by :class:`KafkaBus` before the worker starts;
faust never declares topics itself. The faust web server is off by default, and binds to loopback when on.

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
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import faust

from altm.bus import OutgoingRecord, Record
from altm.bus.kafka import KafkaBus, parse_broker_url
from altm.core.partitioner import partition_for
from altm.core.settings import Settings
from altm.core.topics import Topic, all_topic_specs, topic_name
from altm.pipeline._stage import DeferredQueue, run_processor
from altm.pipeline.processors import Processor, default_processors
from altm.pipeline.runtime._resources import RuntimeResources, build_resources
from altm.pipeline.writer import Writer
from altm.store import ShardSet

log = logging.getLogger("altm.worker")


def _record(message: Any) -> Record:
    key = message.key
    return Record(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=key.decode("utf-8") if isinstance(key, bytes) else key,
        value=message.value if isinstance(message.value, bytes) else bytes(message.value or b""),
        headers=tuple((k, bytes(v)) for k, v in (message.headers or ())),
        timestamp_ms=int((message.timestamp or 0) * 1000),
    )


class FaustRuntime:
    """Builds the faust app; ``run_worker`` runs it as a process, tests may drive it the same way."""

    def __init__(self, settings: Settings, processors: Sequence[Processor] | None = None) -> None:
        if not settings.broker:
            raise ValueError("the Kafka runtime needs a broker (ALTM_BROKER or --broker kafka://HOST:PORT)")
        self.settings = settings
        self.partitions = settings.partitions
        self.shards = ShardSet(settings.data_dir, settings.partitions)
        self.writer = Writer(self.shards, settings)
        self.deferred = DeferredQueue(self.shards, settings)
        self.resources: RuntimeResources = build_resources(settings, self.shards)
        self.ctx = self.resources.ctx
        self.processors = list(processors) if processors is not None else default_processors()
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
        for proc in self.processors:
            self._add_processor_agent(app, proc)
        self._add_writer_agent(app)
        app.timer(1.0)(self._flush_all)
        app.timer(5.0)(self._retry_deferred)
        return app

    def _topic(self, app: faust.App, topic: Topic) -> Any:
        return app.topic(
            topic_name(topic, self.settings.topic_prefix),
            key_serializer="raw",
            value_serializer="raw",
            partitions=self.partitions,
            internal=False,
        )

    async def _send(self, rec: OutgoingRecord) -> None:
        part = rec.partition
        if part is None:
            part = partition_for(rec.key, self.partitions) if rec.key is not None else 0
        await self.app.producer.send_and_wait(
            rec.topic,
            rec.key.encode("utf-8") if rec.key is not None else None,
            rec.value,
            partition=part,
            timestamp=None,
            headers=list(rec.headers) or None,
        )

    def _add_processor_agent(self, app: faust.App, proc: Processor) -> None:
        async def agent(stream: Any) -> AsyncIterator[None]:
            async for event in stream.events():
                rec = _record(event.message)
                result = await run_processor(proc, rec, self.ctx)
                for rec_, reason in result.deferred:
                    self.deferred.add(proc.name, rec_, reason)
                for out in result.outgoing:
                    await self._send(out)
                yield None

        app.agent(self._topic(app, proc.input_topic), name=f"altm-{proc.name}")(agent)

    def _add_writer_agent(self, app: faust.App) -> None:
        async def writer(stream: Any) -> AsyncIterator[None]:
            async for event in stream.events():
                rec = _record(event.message)
                self.writer.apply(rec, self.partitions)
                await self._flush(rec.partition)
                yield None

        app.agent(self._topic(app, Topic.PROPOSALS), name="altm-writer")(writer)

    async def _flush(self, partition: int) -> None:
        shard = self.shards.get(partition)
        while pending := shard.pending_outbox():
            for _, topic, key, value in pending:
                await self._send(OutgoingRecord(topic, value, key=key))
            shard.mark_published(pending[-1][0])

    async def _retry_deferred(self) -> None:
        for proc in self.processors:
            for work_id, rec in self.deferred.due(proc.name):
                result = await run_processor(proc, rec, self.ctx)
                if result.deferred:
                    self.deferred.add(proc.name, rec, result.deferred[0][1])
                    continue
                for out in result.outgoing:
                    await self._send(out)
                self.deferred.done(work_id, rec.partition)

    async def _flush_all(self) -> None:
        """Publish changes committed by an earlier run but not yet delivered, for the partitions whose
        proposals this worker owns (workers may share a data dir; each flushes only its own shards)."""
        proposals = topic_name(Topic.PROPOSALS, self.settings.topic_prefix)
        owned = {tp.partition for tp in self.app.consumer.assignment() if tp.topic == proposals}
        for partition in sorted(owned):
            await self._flush(partition)


async def create_topics(settings: Settings) -> None:
    bus = KafkaBus(settings.broker or "")
    await bus.start()
    try:
        await bus.ensure_topics(
            all_topic_specs(settings.partitions, settings.topic_prefix, settings.dlq_retention_ms)
        )
    finally:
        await bus.stop()


def run_worker(settings: Settings) -> None:
    """Create the topics, then run a faust worker until SIGINT/SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if settings.embedder != "none" and settings.vector_backend == "edge":
        log.warning("the embedded vector index belongs to one process: with several workers set "
                    "ALTM_VECTOR_BACKEND=qdrant and ALTM_QDRANT_URL (one collection per embedding model)")
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    asyncio.run(create_topics(settings))
    runtime = FaustRuntime(settings)
    worker = faust.Worker(runtime.app, loglevel="WARNING", quiet=True)
    worker.execute_from_commandline()
