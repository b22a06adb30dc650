"""The host SDK's durable outbox across a real broker outage (its own Apache Kafka broker, loopback)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from altm.bus.kafka import KafkaBus
from altm.core import Scope, all_topic_specs, decode_event
from altm.core.settings import Settings
from altm.interfaces.sdk import HostProducer
from tests.support.processes import free_port
from tests.support.turns import make_turn

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
