"""``--broker`` makes an admin command (and ``altm serve``) drop the data dir's partition count for its own default.

Finding: ``resolve`` (altm/wiring/_adapters.py:93-97) applies the partition count and topic prefix a Kafka data dir
recorded (``deployment.json``, written by the worker: ``record_deployment``, altm/wiring/_worker.py:53) only when
the bus comes from that record (``if bus is None and recorded is not None``). The README tells operators to act on
a Kafka deployment with ``--broker kafka://HOST:PORT`` (``altm erase/retention/review … --broker``, ``altm serve
--broker``), and with it the command takes ``ALTM_PARTITIONS`` of its own environment (default 4) instead, and
nothing asks the broker how many partitions the topics have (the worker's ``ensure_topics`` check is not run by
a client: ``open_deployment``, altm/wiring/_deployment.py:196, opens ``ShardSet(data_dir, settings.partitions)``
as given). On the data dir of an 8-partition deployment every read routes a user to
``partition_for(home, 4)``, a shard that holds other users: ``altm erase --memory ID`` looks the memory up there
(``AdminService.erase`` → ``recall.memory``, altm/app/_admin.py:110-111) and refuses the erasure ("no memory"),
``altm erase --session`` says "nothing … was stored … nothing erased" after the workers erased it, ``altm prepare``
and the service's recall answer without the user's memories. And ``altm serve --broker`` then records its own
count in the workers' data dir (``_serving``, altm/interfaces/serve.py:67-68, ``record_deployment``), so the
commands run later without ``--broker`` (which did read 8) read 4 too, until a worker restarts.

Reproduction: a worker with ``--partitions 8`` stores a turn of ``user1`` (partition 6 of 8, 2 of 4); ``altm
erase --memory <its L0 id> --scope … --broker kafka://… --data-dir <worker's dir>`` with no ``ALTM_PARTITIONS``
(the same command without ``--broker`` finds the memory); and ``altm serve --broker`` started on that data dir.

Expected: a client given ``--broker`` for a data dir that recorded its deployment keeps the recorded partition
count and prefix (or asks the broker for the topics' count, and refuses a count that differs, naming it): the
erasure by id is applied (the memory leaves the worker's shard), or refused with a message naming the partition
count; ``altm serve --broker`` never rewrites the workers' ``deployment.json`` with another partition count.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from altm.bus import host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs, partition_for
from altm.core.settings import Settings
from altm.interfaces.serve import _serving
from altm.store import count_layer
from altm.wiring import open_deployment
from tests.support.turns import make_turn
from tests.support.workers import Process, start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka

TOPIC_PARTITIONS = 8
USER = Scope(tenant_id="t", workspace_id="w", user_id="user1", agent_id="a")


async def _publish(bootstrap: str, prefix: str, turns: list[TurnEvent]) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(TOPIC_PARTITIONS, prefix))
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()


async def _worker_with_a_memory(bootstrap: str, tmp_path: Path) -> tuple[Process, Path, dict[str, str], str]:
    """A running worker of an 8-partition deployment whose shard holds one L0 message of ``USER``: the worker,
    its data dir, the environment (no ALTM_PARTITIONS) and the message's id."""
    assert partition_for(USER.home, TOPIC_PARTITIONS) != partition_for(USER.home, Settings().partitions)
    prefix = f"ab{uuid.uuid4().hex[:10]}."
    env = {k: v for k, v in os.environ.items() if k != "ALTM_PARTITIONS"}
    env.update({"ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none",
                "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}"})
    await _publish(bootstrap, prefix, [make_turn(1, "Our billing jobs run nightly on Airflow.", scope=USER)])
    data = tmp_path / "worker"
    worker = start_worker(bootstrap, data, env, partitions=TOPIC_PARTITIONS)
    for _ in range(240):
        if count_layer(data, "L0") >= 1:
            break
        await asyncio.sleep(0.25)
    await wait_until_idle(bootstrap, prefix, worker, data_dir=data)
    ids = await _l0_ids(data, env)
    assert len(ids) == 1, ids
    return worker, data, env, ids[0]


async def _l0_ids(data: Path, env: dict[str, str]) -> list[str]:
    """The L0 messages of ``USER`` in the worker's shards, read with the deployment's own partition count."""
    owner = await open_deployment(Settings(data_dir=data, partitions=TOPIC_PARTITIONS, embedder="none",
                                           topic_prefix=env["ALTM_TOPIC_PREFIX"], keystore=env["ALTM_KEYSTORE"]),
                                  read_only=True)
    async with owner:
        return [str(m["memory_id"]) for m in owner.app.recall.list_memories(USER, layer="L0")]


async def _cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "altm", *args, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    return int(proc.returncode or 0), out.decode(errors="replace")


async def test_an_erasure_by_id_with_broker_reaches_the_memory_or_names_the_partition_count(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    worker, data, env, memory_id = await _worker_with_a_memory(kafka_bootstrap, tmp_path)
    try:
        code, out = await _cli(env, "erase", "--data-dir", str(data), "--scope", USER.path, "--memory", memory_id,
                               "--broker", f"kafka://{kafka_bootstrap}")
        if code != 0:
            assert "partition" in out.lower(), (
                f"`altm erase --memory {memory_id} --broker …` on the data dir of an {TOPIC_PARTITIONS}-partition "
                f"deployment refused the erasure of a stored memory without naming the partition count: {out!r}")
            return
        await wait_until_idle(kafka_bootstrap, env["ALTM_TOPIC_PREFIX"], worker, data_dir=data)
        assert memory_id not in await _l0_ids(data, env), f"the erasure exited 0 and the memory is stored: {out!r}"
    finally:
        stop(worker)


async def test_serve_with_broker_keeps_the_partition_count_the_workers_recorded(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    worker, data, env, memory_id = await _worker_with_a_memory(kafka_bootstrap, tmp_path)
    try:
        recorded = json.loads((data / "deployment.json").read_text(encoding="utf-8"))
        assert recorded["partitions"] == TOPIC_PARTITIONS
        # `altm serve --broker kafka://… --data-dir DIR` (the service beside the workers, one host), no ALTM_PARTITIONS
        settings = Settings(data_dir=data, broker=f"kafka://{kafka_bootstrap}", embedder="none",
                            topic_prefix=env["ALTM_TOPIC_PREFIX"], keystore=env["ALTM_KEYSTORE"])
        try:
            service = await _serving(settings)
        except Exception as exc:  # refused: it must say why
            assert "partition" in str(exc).lower(), f"the service refused without naming the mismatch: {exc!r}"
            return
        try:
            hits = service.app.recall.search(USER, None, "billing jobs Airflow").hits
            found = [h.memory_id for h in hits]
        finally:
            await service.close()
        after = json.loads((data / "deployment.json").read_text(encoding="utf-8"))
        assert after["partitions"] == TOPIC_PARTITIONS, (
            f"`altm serve --broker` rewrote the workers' deployment.json from {TOPIC_PARTITIONS} to "
            f"{after['partitions']} partitions: {after}")
        assert memory_id in found, (
            f"the retrieval service ({service.settings.partitions} partitions) recalls nothing of {USER.path} on the "
            f"data dir of an {TOPIC_PARTITIONS}-partition deployment: {found}")
    finally:
        stop(worker)
