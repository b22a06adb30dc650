"""Reads that follow the partitions (issue 13): the retrieval service keeps a read replica of its own
(``ALTM_READ_REPLICA``), following the proposals log into its own data dir, so workers need no shared disk and
recall answers for every user while partitions move between them. Its state equals the embedded runtime's."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from altm.core.settings import Settings
from altm.wiring import Deployment, open_deployment, state_hash
from tests.integration.test_kafka_restore import _publish, _turns, _until_l0
from tests.support.memories import running
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka


async def _until_replicated(replica: Deployment, memories: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(replica.app.recall.list_memories(None, limit=100_000)) >= memories:
            return
        await asyncio.sleep(0.25)


async def test_the_read_replica_answers_for_every_user_while_partitions_move(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"p{uuid.uuid4().hex[:10]}."
    first, second = _turns(range(0, 3)), _turns(range(3, 5))
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}"}
    await _publish(kafka_bootstrap, prefix, first, create=True)
    dirs = [tmp_path / "worker-a", tmp_path / "worker-b"]
    workers = [start_worker(kafka_bootstrap, d, env) for d in dirs]
    settings = Settings(data_dir=tmp_path / "replica", broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix,
                        partitions=4, embedder="none", read_replica=True, keystore=env["ALTM_KEYSTORE"])
    replica = await open_deployment(settings)
    await replica.start()
    try:
        await _until_l0(dirs[0], 1)
        await wait_until_idle(kafka_bootstrap, prefix, *workers, data_dir=dirs[0])
        await wait_until_idle(kafka_bootstrap, prefix, *workers, data_dir=dirs[1])
        await _until_replicated(replica, len(first))
        for turn in first[:: len(first) // 8]:  # a turn of every user
            hits = replica.app.recall.search(turn.scope, None, "Airflow nightly jobs").hits
            assert any("Airflow" in h.content for h in hits), turn.scope.path
        stop(workers[0])  # its partitions move to the other worker, which restores them from the log
        await _publish(kafka_bootstrap, prefix, second)
        await _until_l0(dirs[1], len(first) + len(second), timeout_s=180)
        await wait_until_idle(kafka_bootstrap, prefix, workers[1], data_dir=dirs[1])
        await _until_replicated(replica, len(first) + len(second))
        for turn in second[:: len(second) // 8]:
            hits = replica.app.recall.search(turn.scope, None, f"standups session {turn.session_id[1:]}").hits
            assert any(f"session {turn.session_id[1:]})" in h.content for h in hits), turn.scope.path
    finally:
        stop(*workers)
        await replica.close()
    async with running(Settings(data_dir=tmp_path / "embedded-all", partitions=4, embedder="none")) as rt:
        await rt.publish(first)
        await rt.run_until_idle()
        await rt.publish(second)
        await rt.run_until_idle()
    assert state_hash(settings.data_dir) == state_hash(tmp_path / "embedded-all")
