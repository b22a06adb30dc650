"""``altm serve --broker`` on the workers' shared data dir keeps every worker from starting again.

Finding: without a read replica, the retrieval service of a Kafka deployment reads the data dir it shares with the
workers (README, "Reads that follow the partitions": "Without it, `altm serve --broker` reads a data dir shared
with the workers (one host only)"). ``open_deployment`` opens that data dir's embedded vector index for the
service (``open_vectors(..., read_only=True)``, altm/wiring/_deployment.py:199), and ``EdgeVectorIndex.open``
takes an *exclusive* ``flock`` on ``<collection>.lock`` even for a read-only handle
(altm/vectors/edge.py:49-57, 71), which the service then holds for as long as it runs. A worker that starts while
the service runs (a crash and its supervisor's restart, a deploy, ``docker compose up --scale``, an OOM kill) opens
the same index for writing in ``_run_claimed`` (altm/wiring/_worker.py:131, ``open_vectors(settings,
models.embedding)``), gets ``VectorIndexBusy`` and exits: no turn is captured, no erasure applied, until somebody
stops the retrieval service. The service, a reader, goes on answering from shards nobody writes any more
(``/healthz`` stays green). README documents only the opposite order ("a read-only command beside a running
pipeline recalls without the vector channel"); here the reader shuts the pipeline out.

Reproduction: a worker (the local embedder, the default) stores a turn in data dir D and stops; ``altm serve
--broker`` (``_serving``, as the CLI runs it) opens D; a worker is started on D again and a new turn published.

Expected: a reading process never keeps the writer from starting: the restarted worker runs and stores the new
turn (the service reads the index without an exclusive lock, or goes without its vector channel, or re-opens it,
but the pipeline's process gets the index).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs
from altm.core.settings import Settings
from altm.interfaces.serve import _serving
from altm.store import count_layer
from tests.support.turns import make_turn
from tests.support.workers import output, start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka

USER = Scope(tenant_id="t", workspace_id="w", user_id="user1", agent_id="a")


async def _publish(bootstrap: str, prefix: str, turns: list[TurnEvent]) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()


async def _until_l0(data: Path, expected: int, timeout_s: float) -> int:
    have = 0
    for _ in range(int(timeout_s * 4)):
        have = count_layer(data, "L0")
        if have >= expected:
            break
        await asyncio.sleep(0.25)
    return have


async def test_a_worker_restarted_beside_the_retrieval_service_runs(kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"sl{uuid.uuid4().hex[:10]}."
    keystore = f"sqlite:///{tmp_path / 'keys.db'}"
    env = {k: v for k, v in os.environ.items() if k not in ("ALTM_EMBEDDER", "ALTM_VECTORS", "ALTM_PARTITIONS")}
    env.update({"ALTM_TOPIC_PREFIX": prefix, "ALTM_KEYSTORE": keystore, "ALTM_WORKER_METRICS_PORT": "0"})
    data = tmp_path / "shared"
    await _publish(kafka_bootstrap, prefix, [make_turn(1, "The billing jobs run nightly on Airflow.", scope=USER)])
    first = start_worker(kafka_bootstrap, data, env)
    try:
        assert await _until_l0(data, 1, timeout_s=90) >= 1, output(first)
        await wait_until_idle(kafka_bootstrap, prefix, first, data_dir=data)
    finally:
        stop(first)
    assert list((data / "vectors").glob("*.lock")), "the worker made no embedded vector index"

    # `altm serve --broker kafka://… --data-dir D` (no read replica): the service beside the workers, one host
    service = await _serving(Settings(data_dir=data, broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix,
                                      partitions=4, keystore=keystore))
    restarted = start_worker(kafka_bootstrap, data, env, capture=True)
    try:
        await _publish(kafka_bootstrap, prefix, [make_turn(2, "Standups are fifteen minutes at most.", scope=USER)])
        have = 0
        for _ in range(240):
            if restarted.poll() is not None:
                break
            have = count_layer(data, "L0")
            if have >= 2:
                break
            await asyncio.sleep(0.25)
        log = output(restarted).decode(errors="replace")
        assert restarted.poll() is None, (
            f"the worker restarted beside `altm serve --broker` exited ({restarted.returncode}): "
            f"{log[-1500:]}")
        assert have >= 2, f"the restarted worker stored no new turn in 60 s ({have} L0 rows): {log[-1500:]}"
    finally:
        stop(restarted)
        await service.close()
