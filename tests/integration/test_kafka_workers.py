"""Two faust workers share the partitions; one is killed with SIGKILL mid-stream and restarted. The final
state equals the embedded runtime's on the same input: nothing lost, nothing duplicated."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

import pytest

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs
from altm.core.settings import Settings
from altm.wiring import state_hash
from tests.integration.test_kafka import _shard_l0_count
from tests.support.memories import running
from tests.support.turns import make_turn
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka

SENTENCES = [
    "We decided to move the nightly jobs to Airflow next week.",
    "I prefer short standups, fifteen minutes at most.",
    "The deploy to staging failed because the migration ran twice.",
    "Don't restart the cache during business hours because it drops sessions; use the maintenance window.",
    "My manager wants a status report every Thursday.",
]


def _turns() -> list[TurnEvent]:
    out = []
    for u in range(16):
        scope = Scope(tenant_id="t", workspace_id="w", user_id=f"user{u}", agent_id="a")
        for s in range(12):  # 960 turns: workers take batches of up to 512, so a kill lands mid-stream
            for i, text in enumerate(SENTENCES):
                content = f"{text} (user {u}, session {s})"
                out.append(make_turn(s * 10 + i, content, scope=scope, session=f"s{s}"))
    return out


async def test_sigkill_mid_stream_loses_and_duplicates_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"k{uuid.uuid4().hex[:10]}."
    turns = _turns()
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()
    data = tmp_path / "kafka"
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none",
           "ALTM_WORKER_SESSION_TIMEOUT_S": "6"}
    a, b = start_worker(kafka_bootstrap, data, env), start_worker(kafka_bootstrap, data, env)
    workers = [a, b]
    try:
        for _ in range(1200):
            if _shard_l0_count(data) >= 1:
                break
            await asyncio.sleep(0.05)
        a.send_signal(signal.SIGKILL)  # mid-stream, no clean shutdown
        a.wait(10)
        killed_at = _shard_l0_count(data)
        assert killed_at < len(turns), "the stream finished before the kill; make the input longer"
        workers.append(start_worker(kafka_bootstrap, data, env))
        for _ in range(480):
            if _shard_l0_count(data) >= len(turns):
                break
            await asyncio.sleep(0.25)
        await wait_until_idle(kafka_bootstrap, prefix, *[w for w in workers if w.poll() is None], data_dir=data)
        assert _shard_l0_count(data) == len(turns)
    finally:
        stop(*workers)
    embedded = Settings(data_dir=tmp_path / "embedded", partitions=4, embedder="none")
    async with running(embedded) as rt:
        await rt.publish(turns)
        await rt.run_until_idle()
    assert state_hash(data) == state_hash(embedded.data_dir)
