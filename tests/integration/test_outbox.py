"""Across a real broker outage (its own Apache Kafka broker, loopback): the host SDK's durable outbox, and a worker."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, all_topic_specs, decode_event
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from altm.store import count_layer
from tests.support.processes import free_port
from tests.support.turns import make_turn
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kafka.sh"


async def _script(command: str, env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        "bash", str(SCRIPT), command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()


@pytest.fixture
def broker(tmp_path: Path, kafka_bootstrap: str) -> Iterator[tuple[str, dict[str, str]]]:
    port, cport = free_port(), free_port()
    env = {
        **os.environ,
        "ALTM_KAFKA_PORT": str(port),
        "ALTM_KAFKA_CONTROLLER_PORT": str(cport),
        "ALTM_KAFKA_RUN": str(tmp_path / "broker"),
    }
    subprocess.run(["bash", str(SCRIPT), "start"], env=env, check=True, capture_output=True)
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, check=False, capture_output=True)


async def test_events_published_during_an_outage_arrive_once_and_in_order(
    broker: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    bootstrap, env = broker
    settings = Settings(partitions=4)
    bus = KafkaBus(bootstrap)
    await bus.start()
    await bus.ensure_topics(all_topic_specs(4, settings.topic_prefix))
    await bus.stop()
    await _script("stop", env)  # the outage

    producer = HostProducer(
        f"kafka://{bootstrap}", tmp_path / "outbox.db", settings=settings, retry_backoff_s=0.3
    )
    await producer.start()
    scopes = [Scope(tenant_id="t", workspace_id="w", user_id=f"u{i}", agent_id="a") for i in range(3)]
    events = [make_turn(i, f"message {i}", scope=scopes[i % 3], session="s") for i in range(30)]
    for event in events:
        await producer.publish(event)
    await asyncio.sleep(1.0)
    assert producer.pending() == 30 and producer.delivered == 0  # nothing lost, nothing sent yet

    await _script("resume", env)  # the broker returns with its data
    await producer.flush(timeout_s=90)
    assert producer.pending() == 0
    await producer.stop()

    consumer = AIOKafkaConsumer(
        f"{settings.topic_prefix}turns",
        bootstrap_servers=bootstrap,
        group_id="check",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    got: list[Any] = []
    try:
        for _ in range(40):
            batch = await consumer.getmany(timeout_ms=500)
            got += [m for msgs in batch.values() for m in msgs]
            if len(got) >= 30:
                break
    finally:
        await consumer.stop()
    received = [decode_event(m.value) for m in got]
    assert sorted(e.event_id for e in received) == sorted(e.event_id for e in events)  # exactly once
    per_key: dict[str, list[str]] = defaultdict(list)
    for m, e in zip(got, received, strict=True):
        assert m.key is not None and m.key.decode() == e.key
        per_key[e.key].append(e.turn_id)  # type: ignore[union-attr]
    for key, turns in per_key.items():
        expected = [e.turn_id for e in events if e.key == key]
        assert turns == expected, key  # in order per key


async def test_a_worker_rides_out_a_broker_outage_and_stops_while_the_broker_is_down(
    broker: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """Issue 13, robust edges: a worker whose broker goes away keeps running and resumes when it returns (every
    turn of before and after stored, nothing left to consume); SIGTERM while the broker is down ends it within
    its stop timeout. (With the faust runtime, a worker sat idle for 240 s after the broker came back in one
    reported run, and ignored SIGTERM while the broker was down.)"""
    bootstrap, env = broker
    prefix = "o."
    data = tmp_path / "worker"
    scope = Scope(tenant_id="t", workspace_id="w", user_id="u0", agent_id="a")
    worker_env = {**env, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_METRICS_PORT": "0",
                  "ALTM_WORKER_STOP_TIMEOUT_S": "8", "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}"}
    bus = KafkaBus(bootstrap)
    await bus.start()
    await bus.ensure_topics(all_topic_specs(4, prefix))
    await bus.stop()
    worker = start_worker(bootstrap, data, worker_env)
    try:
        await _publish(bootstrap, prefix, [make_turn(i, f"before the outage {i}", scope=scope) for i in range(20)])
        await _until_l0(data, 20, worker)
        await _script("stop", env)  # the outage
        await asyncio.sleep(6.0)
        assert worker.poll() is None  # still running
        await _script("resume", env)
        await _publish(bootstrap, prefix, [make_turn(100 + i, f"after the outage {i}", scope=scope)
                                           for i in range(20)])
        await _until_l0(data, 40, worker)
        await wait_until_idle(bootstrap, prefix, worker, data_dir=data)
        await _script("stop", env)  # down again: a stop signal now must not hang
        started = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
        assert time.monotonic() - started <= 8 + 5
    finally:
        stop(worker)
    assert count_layer(data, "L0") == 40


async def _publish(bootstrap: str, prefix: str, turns: list[Any]) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()


async def _until_l0(data: Path, expected: int, worker: Any, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert worker.poll() is None, "the worker exited"
        if (data / "shards").is_dir() and count_layer(data, "L0") >= expected:
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"fewer than {expected} turns stored within {timeout_s} s")
