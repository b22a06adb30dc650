"""Turns survive rebalances under load (issue 13). Found by benchmark runs: with two workers, a group rebalance
in the middle of a stream left 30-60 turns never stored while every consumer lag reached 0 (offsets committed
past records no stage handled), or a partition that stopped being consumed. Here workers join and leave (a
graceful stop mid-batch, and a SIGKILL) again and again while turns are published; at the end every turn is an
L0 row of its partition's shard, and the group has nothing left to consume."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs, partition_for
from altm.core.settings import Settings
from tests.support.rows import rows
from tests.support.turns import make_turn
from tests.support.workers import Process, start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka
PARTITIONS = 4


def _turns(count: int) -> list[TurnEvent]:
    out = []
    for i in range(count):
        scope = Scope(tenant_id="t", workspace_id="w", user_id=f"user{i % 12}", agent_id="a")
        out.append(make_turn(i, f"turn {i}: we moved the billing job {i % 7} to the new cluster on day {i % 31}",
                             scope=scope, session=f"s{(i // 12) % 5}"))
    return out


async def _publish_steadily(bootstrap: str, prefix: str, turns: list[TurnEvent], per_s: float) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        chunk = 20
        for i in range(0, len(turns), chunk):
            await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns[i:i + chunk]])
            await asyncio.sleep(chunk / per_s)
    finally:
        await bus.stop()


def _l0_per_partition(data_dir: Path) -> Counter[int]:
    counts: Counter[int] = Counter()
    for row in rows(data_dir, "SELECT tenant_id || '/' || workspace_id || '/' || user_id AS home, COUNT(*) AS n "
                              "FROM memories WHERE layer = 'L0' GROUP BY home"):
        counts[partition_for(str(row["home"]), PARTITIONS)] += int(row["n"])
    return counts


async def test_no_turn_is_lost_while_workers_join_and_leave(kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"b{uuid.uuid4().hex[:10]}."
    turns = _turns(2400)
    data_dir = tmp_path / "data"  # one data dir: every worker's shards side by side, so the L0 rows add up
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}", "ALTM_WORKER_METRICS_PORT": "0"}
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(PARTITIONS, prefix))
    finally:
        await bus.stop()
    rng = random.Random(5)
    anchor = start_worker(kafka_bootstrap, data_dir, env, partitions=PARTITIONS)
    guest: Process | None = None
    publishing = asyncio.create_task(_publish_steadily(kafka_bootstrap, prefix, turns, per_s=150.0))
    try:
        for round_ in range(8):  # a guest joins (a rebalance), works a while, then leaves (another one)
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            guest = start_worker(kafka_bootstrap, data_dir, env, partitions=PARTITIONS)
            await asyncio.sleep(rng.uniform(3.0, 6.0))
            if round_ % 3 == 2:
                guest.send_signal(signal.SIGKILL)
                guest.wait(10)
            else:
                stop(guest)
            guest = None
        await publishing
        await wait_until_idle(kafka_bootstrap, prefix, anchor, data_dir=data_dir, timeout_s=240)
    finally:
        publishing.cancel()
        stop(anchor, guest)
    expected = Counter(partition_for(t.key, PARTITIONS) for t in turns)
    assert _l0_per_partition(data_dir) == expected
