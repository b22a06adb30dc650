"""The composition root: a deployment is the bus, the shards, the models, the vector index, the application
and (for the embedded runtime) the pipeline, built from settings in one place."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from altm.app import MemoryApp, Publisher
from altm.bus import Bus, host_record, publish_marked
from altm.bus.embedded import EmbeddedLog, busy_log, writer_running
from altm.bus.kafka import KafkaBus, PartitionReader, parse_broker_url
from altm.bus.sealing import SealedBus
from altm.core import Event, Settings, Topic, topic_name
from altm.models import EmbeddingModel, LLMSettings, ModelTask
from altm.pipeline import (
    EmbeddedRuntime,
    LogBindingError,
    Processor,
    ProcessorContext,
    ReplicaRuntime,
    default_processors,
)
from altm.recall import Retriever
from altm.store import DataDirError, MemoryReader, ShardSet, shard_files
from altm.vectors import VectorIndex, VectorIndexBusy
from altm.wiring._adapters import (
    Models,
    WiringError,
    guard_similarity,
    open_bus,
    open_models,
    open_vectors,
    plain,
    resolve,
)

log = logging.getLogger("altm.deployment")


class ReadOnlyError(RuntimeError):
    """A write was attempted through a deployment opened read-only."""


@dataclass
class Deployment:
    """Everything one process needs of a deployment. ``start`` and ``close`` are explicit (or use it as an
    async context manager); ``close`` stops the pipeline and closes every store it opened."""

    settings: Settings
    bus: Bus
    shards: ShardSet
    models: Models
    vectors: VectorIndex | None
    app: MemoryApp
    runtime: EmbeddedRuntime | None = None
    read_only: bool = False
    replica: ReplicaRuntime | None = None  # a Kafka retrieval service that follows the log into its own data dir
    source_vectors: VectorIndex | None = None  # a replay's source index, read for vectors (closed with this)
    _maintenance: asyncio.Task[None] | None = field(default=None, repr=False)
    _started: bool = field(default=False, repr=False)

    @property
    def is_kafka(self) -> bool:
        return (self.settings.bus or "").startswith("kafka://")

    async def start(self, *, background: bool = False) -> None:
        """Open the bus and, for an embedded pipeline, start it (in the background when asked: turns become
        searchable as they arrive, and the trust sweep runs every ``sweep_interval_s``)."""
        if self._started:
            return
        if not self.read_only:
            await self.bus.start()
        self._started = True
        if self.replica is not None:
            try:
                await self.replica.start(await self.bus.identity())
            except BaseException:
                await self.close()
                raise
        if self.runtime is not None:
            await self.runtime.start(background=background)
            if background:
                self._maintenance = asyncio.create_task(self._sweep_loop(), name="altm-maintenance")

    async def _sweep_loop(self) -> None:
        next_sweep = time.monotonic() + self.settings.sweep_interval_s
        while True:
            await asyncio.sleep(max(0.0, next_sweep - time.monotonic()))
            try:
                await self.app.admin.sweep()
            except Exception:
                log.exception("trust sweep failed; retrying at the next interval")
            next_sweep = time.monotonic() + self.settings.sweep_interval_s

    async def close(self) -> None:
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
            self._maintenance = None
        if self.runtime is not None:
            await self.runtime.stop()
        if self.replica is not None:
            await self.replica.stop()
        self.app.close()  # the reads running end before their shards and index close
        for index in (self.vectors, self.source_vectors):
            if index is not None:
                index.close()
        await self.models.aclose()
        self.shards.close()
        if self._started and not self.read_only:
            await self.bus.stop()
        self._started = False

    async def __aenter__(self) -> Deployment:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def publish(self, events: Sequence[Event]) -> None:
        """Publish host events (turns, control) through the deployment's bus, keyed by scope home."""
        await self.app.protocol.publish(events)

    async def settle(self, timeout_s: float = 120.0, progress: Callable[[str, int], None] | None = None) -> bool:
        """Wait until what was published has been processed: the embedded pipeline runs until idle (``progress``
        hears of the records it processes); on Kafka, until every worker has consumed every topic (no lag).
        False when the timeout passed first."""
        if self.runtime is not None:
            await asyncio.wait_for(self.runtime.run_until_idle(progress), timeout_s)
            return True
        if not self.is_kafka:
            return True
        bus = plain(self.bus)
        assert isinstance(bus, KafkaBus)
        deadline = time.monotonic() + timeout_s
        topics = [topic_name(t, self.settings.topic_prefix) for t in Topic if t is not Topic.DLQ]
        group = f"{self.settings.topic_prefix}workers"
        while time.monotonic() < deadline:
            if await bus.group_lag(group, topics) == 0:
                return True
            await asyncio.sleep(0.5)
        return False


def _refuse_orphaned_shards(settings: Settings) -> None:
    """An embedded log that does not exist yet, beside shards that hold offsets, would start at offset 0
    and the writer would skip everything as already applied: refuse before creating it."""
    log_path = Path((settings.bus or "").removeprefix("sqlite:///"))
    if log_path.exists():
        return
    for partition, path in shard_files(Path(settings.data_dir)):
        shards = ShardSet(settings.data_dir, max(settings.partitions, partition + 1), read_only=True)
        try:
            if shards.get(partition).has_offsets():
                raise LogBindingError(
                    f"{settings.data_dir} has shards that applied another log's records ({path.name}) but no "
                    f"embedded log ({log_path.name}): it belongs to a Kafka deployment or its log was removed. "
                    "Use the deployment's own bus (--broker kafka://HOST:PORT) or a fresh data dir")
        finally:
            shards.close()


def _refuse_to_open(settings: Settings, *, pipeline: bool, read_only: bool, kafka: bool) -> None:
    """What no deployment of these settings may be opened as, refused before anything is opened."""
    if pipeline and kafka:
        raise WiringError("the Kafka runtime runs in `altm worker` processes, not in this one")
    if pipeline and read_only:
        raise WiringError("a read-only deployment cannot run the pipeline")
    if not kafka and not read_only:
        _refuse_orphaned_shards(settings)
    if pipeline and (settings.bus or "").startswith("sqlite:///"):
        log_path = Path((settings.bus or "").removeprefix("sqlite:///"))
        if writer_running(log_path):  # said first: the vector index, opened before the log, said it in a traceback
            raise busy_log(log_path)


async def _topics_partition_count(settings: Settings, *, explicit: bool) -> Settings:
    """``settings`` with the partition count of the deployment's topics on Kafka (the workers' and the host SDK's),
    where its own came from a default; an explicit count that differs is refused. A reader with its own count
    (a read replica, the retrieval service, an admin command given --broker) routed users to shards that do not
    hold their memories and answered with nothing."""
    topic = topic_name(Topic.TURNS, settings.topic_prefix)
    bus = KafkaBus(parse_broker_url(settings.bus or ""))
    try:
        await bus.start()
        count = await bus.existing_partitions(topic)
    except Exception as exc:  # the broker away: the deployment's start says so
        log.warning("could not ask the broker for %s's partition count: %s", topic, exc)
        return settings
    finally:
        await bus.stop()
    if count is None or count == settings.partitions:  # no such topic yet: nothing to agree with
        return settings
    if explicit:
        raise WiringError(f"topic {topic!r} has {count} partitions, not {settings.partitions} (ALTM_PARTITIONS): "
                          "every process of a deployment routes users by the topics' count; leave it unset")
    return settings.model_copy(update={"partitions": count})


async def open_deployment(
    settings: Settings, *, pipeline: bool = False, read_only: bool = False,
    processors: Sequence[Processor] | None = None, llm_settings: dict[ModelTask, LLMSettings] | None = None,
    vectors_from: Path | None = None,
) -> Deployment:
    """Build a deployment (not started). ``pipeline`` runs the embedded pipeline in this process (the
    embedded bus only: Kafka pipelines run in ``altm worker`` processes); ``read_only`` opens the shards
    and the log read-only and refuses every publish. ``vectors_from``: a data dir (a replay's source) whose
    embedded vector index, opened read-only, gives the vectors of memories with the same id and content, so
    they are not computed again."""
    explicit = "partitions" in settings.model_fields_set
    settings = resolve(settings)
    kafka = (settings.bus or "").startswith("kafka://")
    if kafka:
        settings = await _topics_partition_count(settings, explicit=explicit)
    _refuse_to_open(settings, pipeline=pipeline, read_only=read_only, kafka=kafka)
    bus = open_bus(settings, read_only=read_only)
    # without the pipeline this process only reads the store: a Kafka client (admin commands, the retrieval
    # service) opens the workers' shards read-only and leaves their vector index to them; a read replica
    # (ALTM_READ_REPLICA) writes shards and vectors of its own, following the log
    follows = kafka and settings.read_replica and not read_only
    shards = ShardSet(settings.data_dir, settings.partitions, read_only=(read_only or kafka) and not follows)
    models = open_models(settings, shards, llm_settings)
    try:
        if kafka and not follows and (settings.vectors or "").startswith("edge:///"):
            # the workers' embedded index: a reader holding it (its lock is exclusive) kept a worker that started
            # after it from running at all; a read replica, or a Qdrant server, gives a Kafka reader its vectors
            log.warning("recall without its vector channel: the embedded vector index of %s belongs to the "
                        "workers (ALTM_READ_REPLICA=true or a Qdrant server gives this process vectors)",
                        settings.data_dir)
            vectors = None
        else:
            vectors = open_vectors(settings, models.embedding, read_only=not (pipeline or follows))
    except VectorIndexBusy as exc:
        if pipeline:
            await models.aclose()
            raise
        log.warning("recall without its vector channel: %s", exc)  # the pipeline's process holds the index
        vectors = None
    except BaseException:
        await models.aclose()
        raise
    runtime = None
    source_vectors = None
    if pipeline:
        assert isinstance(plain(bus), EmbeddedLog)
        if vectors_from is not None and processors is None:
            source_vectors = _source_vectors(settings, vectors_from, models.embedding)
        procs = processors if processors is not None else default_processors(models.chat, models.embedding, vectors,
                                                                             source_vectors)
        ctx = ProcessorContext(settings=settings, reader=MemoryReader(shards))
        keys = bus.sealer.keys if isinstance(bus, SealedBus) else None
        runtime = EmbeddedRuntime(settings, bus, shards, ctx, procs, keys, guard_similarity(settings))
    replica = None
    if follows:
        sealer = bus.sealer if isinstance(bus, SealedBus) else None
        reader = PartitionReader(parse_broker_url(settings.bus or ""),
                                 topic_name(Topic.PROPOSALS, settings.topic_prefix), max_records=settings.poll_batch)
        replica = ReplicaRuntime(settings, shards, reader, sealer=sealer, embedding=models.embedding,
                                 vectors=vectors, similarity=guard_similarity(settings),
                                 guard_keys=sealer.keys if sealer is not None else None)
    retriever = Retriever(shards, models.embedding, vectors)
    app = MemoryApp(settings, shards, retriever, _publisher(settings, bus, read_only), models.chat)
    return Deployment(settings, bus, shards, models, vectors, app, runtime=runtime, read_only=read_only,
                      replica=replica, source_vectors=source_vectors)


def _source_vectors(settings: Settings, source: Path, embedding: EmbeddingModel | None) -> VectorIndex | None:
    """``source``'s embedded vector index of this embedding model, read-only; None when it has none (or
    another process holds it: then everything is embedded as usual)."""
    try:
        return open_vectors(resolve(settings.model_copy(update={"data_dir": source, "vectors": None})), embedding,
                            read_only=True)
    except VectorIndexBusy as exc:
        log.warning("the source's vectors are not reused (everything is embedded again): %s", exc)
        return None


def _publisher(settings: Settings, bus: Bus, read_only: bool) -> Publisher:
    # both runtimes order control events and turns by the turns offset a control event carries
    # (altm.bus._order): it is asked of the log when a batch holds one that orders derivation
    async def publish(events: Sequence[Event]) -> None:
        if read_only:
            raise ReadOnlyError("this deployment was opened read-only: it cannot publish")
        records = [host_record(settings, e) for e in events]
        await publish_marked(bus, settings.topic_prefix, records)

    return publish


@asynccontextmanager
async def open_embedded(
    settings: Settings, *, background: bool = False, processors: Sequence[Processor] | None = None,
    llm_settings: dict[ModelTask, LLMSettings] | None = None, vectors_from: Path | None = None,
) -> AsyncIterator[Deployment]:
    """The embedded deployment with its pipeline in this process, started and closed around the block.

    ``background``: process events as they arrive; otherwise call ``deployment.runtime.run_until_idle()``
    (or ``deployment.settle()``) to process what was published."""
    deployment = await open_deployment(settings, pipeline=True, processors=processors, llm_settings=llm_settings,
                                       vectors_from=vectors_from)
    try:
        await deployment.start(background=background)
        yield deployment
    finally:
        await deployment.close()


def _require_log(settings: Settings) -> None:
    log_path = Path((settings.bus or "").removeprefix("sqlite:///"))
    if (settings.bus or "").startswith("sqlite:///") and not log_path.exists():
        raise DataDirError(f"{settings.data_dir} is not an ALTM data dir (no {log_path.name}); run `altm ingest` "
                           "first")


@asynccontextmanager
async def open_read_only(settings: Settings) -> AsyncIterator[Deployment]:
    """Recall, listings and drilldown beside a running pipeline: nothing can be written."""
    resolved = resolve(settings)
    _require_log(resolved)
    deployment = await open_deployment(resolved, read_only=True)
    try:
        yield deployment
    finally:
        await deployment.close()


__all__ = ["Deployment", "ReadOnlyError", "open_deployment", "open_embedded", "open_read_only"]
