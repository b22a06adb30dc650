"""``altm worker``: the Kafka runtime in this process, built from the same parts as every deployment."""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import threading
from pathlib import Path

from prometheus_client import start_http_server

from altm.bus import TopicPartition
from altm.bus.kafka import KafkaBus
from altm.core import Settings, Topic, all_topic_specs, topic_name
from altm.pipeline import ProcessorContext, check_log_binding, default_processors
from altm.pipeline.runtime.kafka import DataDirClaim, KafkaRuntime, worker_claim
from altm.store import MemoryReader, ShardSet, shard_files
from altm.wiring._adapters import (
    WiringError,
    configure_tracing,
    guard_similarity,
    open_models,
    open_sealer,
    open_vectors,
    record_deployment,
    resolve,
)

log = logging.getLogger("altm.worker")


async def prepare_kafka(settings: Settings) -> str:
    """Create the topics, bind the data dir's shards to this cluster (refusing shards of another log) and
    record the bus in the data dir. Returns the log's identity."""
    bus = KafkaBus(settings.bus or "")
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(settings.partitions, settings.topic_prefix, settings.dlq_retention_ms))
        identity = await bus.identity()
        proposals = topic_name(Topic.PROPOSALS, settings.topic_prefix)
        ends = await bus.end_offsets([TopicPartition(proposals, p) for p in range(settings.partitions)])
    finally:
        await bus.stop()
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        for partition, _ in shard_files(Path(settings.data_dir)):
            check_log_binding(shards.get(partition), identity, proposals, ends[TopicPartition(proposals, partition)])
    finally:
        shards.close()
    record_deployment(settings)
    return identity


def serve_metrics(settings: Settings) -> bool:
    """Prometheus ``/metrics`` of this worker on ``ALTM_WORKER_METRICS_HOST:PORT`` (loopback by default), in a
    thread of its own. A port already taken (another worker on this host) is a warning, not a failure."""
    if settings.worker_metrics_port == 0:  # ALTM_WORKER_METRICS_PORT=0: off
        return False
    try:
        start_http_server(settings.worker_metrics_port, addr=settings.worker_metrics_host)
    except OSError as exc:
        log.warning("no /metrics on %s:%d (%s): set ALTM_WORKER_METRICS_PORT to a free port per worker",
                    settings.worker_metrics_host, settings.worker_metrics_port, exc)
        return False
    log.info("metrics on http://%s:%d/metrics", settings.worker_metrics_host, settings.worker_metrics_port)
    return True


def _force_exit(seconds: float) -> None:
    log.error("the worker did not stop within %.0f s of the stop signal (is the broker unreachable?): exiting "
              "now; what it applied is durable and the next start resumes from the offsets stored with it", seconds)
    logging.shutdown()
    os._exit(1)


def _dump_tasks() -> None:
    """SIGUSR1: every asyncio task's stack in the log (the threads' stacks go to stderr, by faulthandler)."""
    for task in asyncio.all_tasks():
        frames = task.get_stack(limit=8)
        where = " <- ".join(f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno}" for f in frames)
        log.warning("task %s: %s", task.get_name(), where or "(not started)")


async def run_until_signalled(runtime: KafkaRuntime, stop_timeout_s: float) -> None:
    """Start ``runtime``, run it until SIGTERM or SIGINT, then stop it; a stop that hangs (a broker that is down)
    ends the process after ``stop_timeout_s``."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    loop.add_signal_handler(signal.SIGUSR1, _dump_tasks)
    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=True)
    await runtime.start()
    log.info("worker started: group %sworkers", runtime.settings.topic_prefix)
    await stopping.wait()
    watchdog = threading.Timer(stop_timeout_s, _force_exit, args=(stop_timeout_s,))
    watchdog.daemon = True
    watchdog.start()
    try:
        await runtime.stop()
    finally:
        watchdog.cancel()
    log.info("worker stopped")


def run_worker(settings: Settings) -> None:
    """Run a worker until SIGINT/SIGTERM (processors and the writer for the partitions it owns)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    settings = resolve(settings)
    if not (settings.bus or "").startswith("kafka://"):
        raise WiringError("a worker needs a Kafka bus (--broker kafka://HOST:PORT or ALTM_BUS=kafka://…)")
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    claim = worker_claim(settings)
    claim.take()  # first: a refused worker touches neither the data dir nor the broker
    try:
        _run_claimed(settings, claim)
    finally:
        claim.release()


def _run_claimed(settings: Settings, claim: DataDirClaim) -> None:
    identity = asyncio.run(prepare_kafka(settings))
    serve_metrics(settings)
    configure_tracing(settings)
    shards = ShardSet(settings.data_dir, settings.partitions)
    models = open_models(settings, shards)
    vectors = open_vectors(settings, models.embedding)
    ctx = ProcessorContext(settings=settings, reader=MemoryReader(shards))
    sealer = open_sealer(settings)
    try:
        runtime = KafkaRuntime(settings, shards, ctx, default_processors(models.chat, models.embedding, vectors),
                               identity, sealer, guard_similarity(settings), vectors, claim=claim)
        asyncio.run(run_until_signalled(runtime, settings.worker_stop_timeout_s))
    finally:
        if vectors is not None:
            vectors.close()
        if sealer is not None:
            sealer.keys.close()
        shards.close()
