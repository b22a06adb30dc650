"""The read replica follows its own partition count, not the topics': users on the other partitions get nothing.

Finding: the retrieval service's read replica (``altm serve --broker`` with ``ALTM_READ_REPLICA=true``) takes the
partition count from its own ``Settings`` (``ALTM_PARTITIONS`` of the service's process, default 4) and never asks
the broker how many partitions the deployment's topics have. ``ReplicaRuntime._follow_from``
(altm/pipeline/runtime/replica.py:86) follows ``range(self.settings.partitions)`` of the proposals topic, and
``open_deployment`` (altm/wiring/_deployment.py:196) opens ``ShardSet(data_dir, settings.partitions)``, which
recall routes by (``partition_for(home, shards.partitions)``). Nothing compares that count with the topics: the
worker refuses a count that differs from the topics' (``KafkaBus.ensure_topics``, altm/bus/kafka/_bus.py:118-122,
called by ``prepare_kafka``, altm/wiring/_worker.py:41), the host SDK and every other publisher route by the
broker's count (``KafkaBus.partitions``), the embedded reading commands refuse a count that differs from their
log's (``resolve``, altm/wiring/_adapters.py:102-106), but the replica starts, follows partitions 0..3 of an
8-partition deployment, and its recall answers "nothing" for every user on partitions 4..7, without an error or a
warning. A replica whose environment lacks the workers' ``ALTM_PARTITIONS`` (the compose file sets 8 in a shared
anchor; a retrieval service started by hand, or in another manifest, has the default 4) silently loses half of
the users' memories in recall (with a count that does not divide the topics', e.g. 6 of 8, it also applies users
into shards recall never routes them to).

Reproduction: topics made with 8 partitions, a worker with ``--partitions 8`` derives one turn of each of 8
users (at least one on a partition >= 4); a read replica opened as ``altm serve --broker`` opens it (no
partition count given) and is given time to catch up; recall for each user.

Expected: the replica refuses to start when its partition count differs from the proposals topic's (an error
naming both counts), or follows every partition of the topics and routes recall by the topics' count: never a
service that starts and answers nothing for users whose memories are on the log.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs, partition_for
from altm.core.settings import Settings
from altm.store import count_layer
from altm.wiring import Deployment, open_deployment
from tests.support.turns import make_turn
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka

TOPIC_PARTITIONS = 8
USERS = [Scope(tenant_id="t", workspace_id="w", user_id=f"user{u}", agent_id="a") for u in range(8)]


def _turns() -> list[TurnEvent]:
    return [make_turn(u, f"We moved the nightly billing jobs to Airflow (user {u}).", scope=scope, session="s1")
            for u, scope in enumerate(USERS)]


async def _publish(bootstrap: str, prefix: str, turns: list[TurnEvent]) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(TOPIC_PARTITIONS, prefix))
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()


async def _until_replicated(replica: Deployment, memories: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    have = 0
    while time.monotonic() < deadline:
        have = len(replica.app.recall.list_memories(None, limit=100_000))
        if have >= memories:
            break
        await asyncio.sleep(0.25)
    return have


async def test_a_read_replica_with_another_partition_count_refuses_or_answers_for_every_user(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    assert any(partition_for(s.home, TOPIC_PARTITIONS) >= 4 for s in USERS)
    prefix = f"rp{uuid.uuid4().hex[:10]}."
    keystore = f"sqlite:///{tmp_path / 'keys.db'}"
    env = {k: v for k, v in os.environ.items() if k != "ALTM_PARTITIONS"}
    env.update({"ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_KEYSTORE": keystore})
    turns = _turns()
    await _publish(kafka_bootstrap, prefix, turns)
    worker_dir = tmp_path / "worker"
    worker = start_worker(kafka_bootstrap, worker_dir, env, partitions=TOPIC_PARTITIONS)
    try:
        for _ in range(240):
            if count_layer(worker_dir, "L0") >= len(turns):
                break
            await asyncio.sleep(0.25)
        await wait_until_idle(kafka_bootstrap, prefix, worker, data_dir=worker_dir)
    finally:
        stop(worker)
    owner = await open_deployment(Settings(data_dir=worker_dir, partitions=TOPIC_PARTITIONS, embedder="none",
                                           bus=f"kafka://{kafka_bootstrap}", topic_prefix=prefix, keystore=keystore),
                                  read_only=True)
    async with owner:
        memories = len(owner.app.recall.list_memories(None, limit=100_000))
    assert memories >= len(turns)

    # `altm serve --broker kafka://… --data-dir DIR` with ALTM_READ_REPLICA=true and no ALTM_PARTITIONS
    settings = Settings(data_dir=tmp_path / "replica", broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix,
                        embedder="none", read_replica=True, keystore=keystore)
    assert settings.partitions != TOPIC_PARTITIONS
    replica = await open_deployment(settings)
    try:
        try:
            await replica.start()
        except Exception as exc:  # refused: it must say why
            assert "partition" in str(exc).lower(), f"the replica refused without naming the mismatch: {exc!r}"
            return
        have = await _until_replicated(replica, memories, timeout_s=20.0)
        missing = [s.user_id for u, s in enumerate(USERS)
                   if not any(f"(user {u})" in h.content
                              for h in replica.app.recall.search(s, None, "nightly billing jobs Airflow").hits)]
        assert not missing, (
            f"the read replica ({settings.partitions} partitions; the topics have {TOPIC_PARTITIONS}) started and "
            f"holds {have} of the workers' {memories} memories; recall finds nothing for {missing} (partitions "
            f"{[partition_for(s.home, TOPIC_PARTITIONS) for s in USERS if s.user_id in missing]} of "
            f"{TOPIC_PARTITIONS})")
    finally:
        await replica.close()
