"""Partition-local state (issue 13): a worker with a data dir of its own that takes over partitions another
worker filled restores their shards from the proposals log (the writer's changelog) before it applies anything
new, with no model call, and ends at the embedded runtime's state. Before, it applied only the proposals after
the group's committed offset: half the users' memories were missing, and proposals citing the missing ones
were rejected ("edge end … is neither a memory nor a graph node in this shard")."""

from __future__ import annotations

import asyncio
import base64
import os
import random
import secrets
import signal
import sqlite3
import uuid
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.bus import Record, host_record
from altm.bus.kafka import KafkaBus
from altm.core import Scope, TurnEvent, all_topic_specs
from altm.core.settings import Settings
from altm.store import shard_files
from altm.store._rows import TOMBSTONE_COLUMNS
from altm.wiring import open_deployment, state_hash
from tests.integration.test_kafka import _shard_l0_count
from tests.integration.test_kafka_service import _segment_bytes
from tests.integration.test_kafka_workers import SENTENCES
from tests.negative.test_erasure_bytes import SECRET, occurrences
from tests.support.memories import running
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.turns import make_turn
from tests.support.workers import Process, output, start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka
Handle = Callable[[Sequence[Record]], Coroutine[Any, Any, int]]


def _turns(sessions: range) -> list[TurnEvent]:
    out = []
    for u in range(8):
        scope = Scope(tenant_id="t", workspace_id="w", user_id=f"user{u}", agent_id="a")
        for s in sessions:
            for i, text in enumerate(SENTENCES):
                out.append(make_turn(s * 10 + i, f"{text} (user {u}, session {s})", scope=scope, session=f"s{s}"))
    return out


async def _publish(bootstrap: str, prefix: str, turns: list[TurnEvent], *, create: bool = False) -> None:
    bus = KafkaBus(bootstrap)
    await bus.start()
    try:
        if create:
            await bus.ensure_topics(all_topic_specs(4, prefix))
        await bus.publish_many([host_record(Settings(topic_prefix=prefix), t) for t in turns])
    finally:
        await bus.stop()


async def _until_l0(data_dir: Path, expected: int, timeout_s: float = 120.0) -> None:
    for _ in range(int(timeout_s * 4)):
        if _shard_l0_count(data_dir) >= expected:
            return
        await asyncio.sleep(0.25)


async def test_a_worker_with_its_own_data_dir_restores_the_partitions_it_takes_over(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    prefix = f"r{uuid.uuid4().hex[:10]}."
    first, second = _turns(range(0, 4)), _turns(range(4, 6))
    # the key store is the deployment's secret, not partition state (it is never on the log): both workers use it
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}"}
    await _publish(kafka_bootstrap, prefix, first, create=True)
    dir_a, dir_b = tmp_path / "worker-a", tmp_path / "worker-b"
    a = start_worker(kafka_bootstrap, dir_a, env)
    try:
        await _until_l0(dir_a, len(first))
        await wait_until_idle(kafka_bootstrap, prefix, a, data_dir=dir_a)
    finally:
        stop(a)
    b = start_worker(kafka_bootstrap, dir_b, env)
    try:
        # no new turn yet (A committed them all): only a restore from the proposals log fills B's shards
        await _until_l0(dir_b, len(first))
        assert _shard_l0_count(dir_b) == len(first)
        await _publish(kafka_bootstrap, prefix, second)
        await _until_l0(dir_b, len(first) + len(second))
        await wait_until_idle(kafka_bootstrap, prefix, b, data_dir=dir_b)
    finally:
        stop(b)
    assert not rows(dir_b, "SELECT reason FROM rejections")  # nothing cites a memory the shard lacks
    assert state_hash(dir_b) == await _embedded_state(tmp_path, first, second)


async def _embedded_state(tmp_path: Path, *batches: list[TurnEvent]) -> str:
    """The embedded runtime's state hash after ``batches``, each derived before the next is published."""
    embedded = Settings(data_dir=tmp_path / "embedded", partitions=4, embedder="none")
    async with running(embedded) as rt:
        for batch in batches:
            await rt.publish(batch)
            await rt.run_until_idle()
    return state_hash(embedded.data_dir)


def _kafka_keys(bootstrap: str) -> dict[str, str]:
    """The log's data keys on the broker (a compacted topic), not in a file the workers share."""
    return {"ALTM_KEYSTORE": f"kafka://{bootstrap}", "ALTM_MASTER_KEY": MASTER_KEY}


MASTER_KEY = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


async def test_sigkills_with_separate_data_dirs_lose_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    """Two workers, each with its own data dir and nothing else on disk to share (the data keys are on the
    broker); one is killed with SIGKILL at random points mid-stream and restarted, five times; partitions move
    back and forth, each restored from the log where it lands. At the end the other worker takes every
    partition: its data dir alone holds the embedded runtime's state."""
    prefix = f"s{uuid.uuid4().hex[:10]}."
    turns = _turns(range(0, 16))
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           **_kafka_keys(kafka_bootstrap)}
    await _publish(kafka_bootstrap, prefix, turns, create=True)
    dir_a, dir_b = tmp_path / "worker-a", tmp_path / "worker-b"
    rng = random.Random(13)
    a, b = start_worker(kafka_bootstrap, dir_a, env), start_worker(kafka_bootstrap, dir_b, env)
    try:
        for _ in range(5):
            await asyncio.sleep(rng.uniform(2.0, 6.0))
            a.send_signal(signal.SIGKILL)
            a.wait(10)
            a = start_worker(kafka_bootstrap, dir_a, env)
        stop(a)  # B takes every partition and restores what it lacks
        await _until_l0(dir_b, len(turns), timeout_s=240)
        await wait_until_idle(kafka_bootstrap, prefix, b, data_dir=dir_b)
        assert _shard_l0_count(dir_b) == len(turns)
    finally:
        stop(a, b)
    embedded = Settings(data_dir=tmp_path / "embedded", partitions=4, embedder="none")
    async with running(embedded) as rt:
        await rt.publish(turns)
        await rt.run_until_idle()
    assert_same_state(embedded.data_dir, dir_b, "between the embedded run and the worker that took over")


async def test_an_erasure_holds_through_a_restore_and_in_the_read_replica(
        kafka_bootstrap: str, kafka_segments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Erased in a Kafka deployment: gone from the owning shard, from the read replica, from a shard another
    worker restores from the log afterwards (the erased session's proposals no longer open: their key is
    destroyed, on the broker's key topic, which every process reads), and never in clear on the broker's
    disk. The restored shard and the replica hold the erasure's tombstones, carried on the log (before, the
    restored shard had none: the erased text could come back)."""
    prefix = f"e{uuid.uuid4().hex[:10]}."
    scope = Scope(tenant_id="t", workspace_id="w", user_id="user0", agent_id="a")
    secret = [make_turn(90 + i, text, scope=scope, session="s-secret") for i, text in enumerate(
        [f"My vault code is {SECRET.decode()}, keep it.", f"I prefer that {SECRET.decode()} is rotated monthly."])]
    turns = _turns(range(0, 2)) + secret
    keys = _kafka_keys(kafka_bootstrap)
    keystore = keys["ALTM_KEYSTORE"]
    monkeypatch.setenv("ALTM_MASTER_KEY", keys["ALTM_MASTER_KEY"])  # the replica runs in this process
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           **keys}
    await _publish(kafka_bootstrap, prefix, [], create=True)
    dir_a, dir_b, dir_r = tmp_path / "worker-a", tmp_path / "worker-b", tmp_path / "replica"
    replica = await open_deployment(Settings(
        data_dir=dir_r, broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix, partitions=4, embedder="none",
        read_replica=True, keystore=keystore))
    await replica.start()
    a = b = None
    try:
        await replica.publish(turns)  # sealed, as the host SDK and the retrieval service publish
        a = start_worker(kafka_bootstrap, dir_a, env)
        await _until_l0(dir_a, len(turns))
        await wait_until_idle(kafka_bootstrap, prefix, a, data_dir=dir_a)
        assert occurrences(dir_a)  # stored before the erasure (the probe sees plain bytes)
        await replica.app.erase(scope, "session", session_id="s-secret")
        await wait_until_idle(kafka_bootstrap, prefix, a, data_dir=dir_a)
        stop(a)
        b = start_worker(kafka_bootstrap, dir_b, env)
        await _until_l0(dir_b, len(turns) - len(secret))
        await wait_until_idle(kafka_bootstrap, prefix, b, data_dir=dir_b)
        await asyncio.sleep(2.0)  # the replica follows the same log
    finally:
        stop(a, b)
        await replica.close()
    assert _shard_l0_count(dir_b) == len(turns) - len(secret)
    for where in (dir_a, dir_b, dir_r):
        assert occurrences(where) == {}, where
    tombstones = f"SELECT {', '.join(TOMBSTONE_COLUMNS)} FROM tombstones ORDER BY tombstone_id"
    made = rows(dir_a, tombstones)
    assert made  # and the restored shard and the replica hold them too, hashes included (the guard keys are
    assert rows(dir_b, tombstones) == made  # the key store's): the erased text said again is refused there
    # the replica applied the erasure itself (it had the content then): the same tombstones, at its own time
    assert [{**r, "at": None} for r in rows(dir_r, tombstones)] == [{**r, "at": None} for r in made]
    assert _segment_bytes(kafka_segments, prefix).count(SECRET) == 0


async def test_a_worker_drops_the_partitions_it_gave_away_so_no_stale_copy_misses_an_erasure(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """With ALTM_WORKER_DROP_UNOWNED_AFTER_S, a worker deletes the shard of a partition another worker took
    over: no data dir keeps a copy that an erasure applied by the new owner would not reach."""
    prefix = f"d{uuid.uuid4().hex[:10]}."
    scope = Scope(tenant_id="t", workspace_id="w", user_id="user0", agent_id="a")
    secret = [make_turn(90, f"My vault code is {SECRET.decode()}, keep it.", scope=scope, session="s-secret")]
    turns = _turns(range(0, 2)) + secret
    keystore = f"sqlite:///{tmp_path / 'keys.db'}"
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": keystore, "ALTM_WORKER_DROP_UNOWNED_AFTER_S": "2"}
    await _publish(kafka_bootstrap, prefix, [], create=True)
    dir_a, dir_b = tmp_path / "worker-a", tmp_path / "worker-b"
    service = await open_deployment(Settings(data_dir=tmp_path / "service", broker=f"kafka://{kafka_bootstrap}",
                                             topic_prefix=prefix, partitions=4, embedder="none", keystore=keystore,
                                             read_replica=True))
    await service.start()
    a = b = None
    try:
        await service.publish(turns)
        a = start_worker(kafka_bootstrap, dir_a, env)
        await _until_l0(dir_a, len(turns))
        await wait_until_idle(kafka_bootstrap, prefix, a, data_dir=dir_a)
        b = start_worker(kafka_bootstrap, dir_b, env)  # takes some partitions; A drops its copies of them
        for _ in range(240):
            held_a, held_b = ({p for p, _ in shard_files(d)} for d in (dir_a, dir_b))
            if held_a and held_b and not held_a & held_b and held_a | held_b == {0, 1, 2, 3}:
                break
            await asyncio.sleep(0.5)
        assert held_a and held_b and not held_a & held_b, (held_a, held_b)
        await service.app.erase(scope, "user")
        await wait_until_idle(kafka_bootstrap, prefix, a, b, data_dir=dir_a)
        await wait_until_idle(kafka_bootstrap, prefix, a, b, data_dir=dir_b)
    finally:
        stop(a, b)
        await service.close()
    for where in (dir_a, dir_b):
        assert occurrences(where) == {}, where
    assert _shard_l0_count(dir_a) + _shard_l0_count(dir_b) == len(turns) - 2 * len(SENTENCES) - len(secret)


def _proposal_offsets(data_dir: Path) -> dict[str, int]:
    """Per shard file of ``data_dir``, the next proposals offset its writer stored (what it has applied)."""
    out = {}
    for path in sorted((data_dir / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT MAX(next_offset) FROM consumer_offsets WHERE topic LIKE '%proposals'").fetchone()
            out[path.name] = int(row[0] or 0)
        except sqlite3.OperationalError:  # being made
            out[path.name] = -1
        finally:
            conn.close()
    return out


def _caught_up(standby: Path, owners: Path) -> bool:
    """Every shard of ``standby`` has applied what the same shard of ``owners`` has (4 partitions)."""
    ahead = _proposal_offsets(owners)
    return len(ahead) == 4 and _proposal_offsets(standby) == ahead


async def _until(condition: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    for _ in range(int(timeout_s * 4)):
        if condition():
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"not within {timeout_s} s: {what}")


async def test_a_standby_worker_takes_over_a_dead_workers_partitions_without_a_restore(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """With ALTM_WORKER_STANDBY each worker keeps a copy of the partitions it does not own, applied from the
    log up to what their owner committed: both data dirs hold every user's memories, at the same state. When
    one worker is killed, the other takes its partitions over with nothing left to restore, and ends at the
    embedded runtime's state."""
    prefix = f"w{uuid.uuid4().hex[:10]}."
    first, second = _turns(range(0, 4)), _turns(range(4, 6))
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_SESSION_TIMEOUT_S": "6",
           "ALTM_KEYSTORE": f"sqlite:///{tmp_path / 'keys.db'}", "ALTM_WORKER_STANDBY": "true"}
    await _publish(kafka_bootstrap, prefix, first, create=True)
    dir_a, dir_b = tmp_path / "worker-a", tmp_path / "worker-b"
    a = start_worker(kafka_bootstrap, dir_a, env, capture=True)
    b = start_worker(kafka_bootstrap, dir_b, env, capture=True)
    try:
        await _standby_takes_over(kafka_bootstrap, prefix, (a, dir_a), (b, dir_b), first, second)
    except AssertionError as exc:  # what the workers said: the reason is there
        raise AssertionError(f"{exc}\nworker A: {output(a)[-2500:]!r}\nworker B: {output(b)[-2500:]!r}") from exc
    finally:
        (_, out_b) = stop(a, b)
    log = out_b.decode(errors="replace")
    takeover = log.rfind(": [0, 1, 2, 3]")  # "given 16 partition(s): [0, 1, 2, 3]": B owns every partition
    assert takeover > 0, log[-3000:]
    assert "restoring" not in log[takeover:], log[takeover:][-3000:]  # its copies were warm
    assert not rows(dir_b, "SELECT reason FROM rejections")
    assert state_hash(dir_b) == await _embedded_state(tmp_path, first, second)


async def _standby_takes_over(bootstrap: str, prefix: str, owner: tuple[Process, Path], standby: tuple[Process, Path],
                              first: list[TurnEvent], second: list[TurnEvent]) -> None:
    """Both data dirs hold ``first``, at one state; the owner is killed; the standby derives ``second``."""
    (a, dir_a), (b, dir_b) = owner, standby
    for where in (dir_a, dir_b):  # every user's turns in both data dirs: each worker's own and its copies
        await _until(lambda: _shard_l0_count(where) == len(first), f"{where.name} holds every turn")  # noqa: B023
    await wait_until_idle(bootstrap, prefix, a, b, data_dir=dir_a)
    await wait_until_idle(bootstrap, prefix, a, b, data_dir=dir_b)
    await _until(lambda: _caught_up(dir_b, dir_a), "the standby copies caught up with their owners")
    assert state_hash(dir_a) == state_hash(dir_b)
    a.send_signal(signal.SIGKILL)
    a.wait(10)
    await _publish(bootstrap, prefix, second)
    await _until(lambda: _shard_l0_count(dir_b) == len(first) + len(second), "B derived the new turns")
    await wait_until_idle(bootstrap, prefix, b, data_dir=dir_b)


async def _rewind_group(bootstrap: str, prefix: str) -> None:
    """Every pipeline topic's committed offset of the workers' group back to 0: the group as a worker leaves it
    when it is killed before its first commit, having applied proposals and published their changes."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as KafkaTP

    from altm.core import Topic, topic_name

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=f"{prefix}workers", enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [KafkaTP(topic_name(t, prefix), p) for t in Topic if t is not Topic.DLQ for p in range(4)]
        consumer.assign(tps)
        await consumer.commit({tp: 0 for tp in tps})
    finally:
        await consumer.stop()


async def test_a_stage_of_a_worker_taking_over_reads_no_change_its_shard_has_not_applied(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed after it applied proposals and published their changes, before it committed the
    proposals' offsets, leaves changes on the log made from proposals past the group's committed offset. The
    worker given its partitions restored its shards only up to that committed offset, so its deriving stages
    read those changes over a shard that had not applied them (its writer re-applies them, but in a race with
    the stages): what they derived read a shard behind the change (the Kafka SIGKILL restore test's facet citing
    the later of two atoms). Every change a stage reads must name a proposal its shard has applied."""
    from altm.core import ChangeEvent, ChangeStatus, Topic
    from altm.core.codec import decode_event
    from altm.pipeline import ProcessorContext, default_processors
    from altm.pipeline.runtime.kafka import KafkaRuntime
    from altm.pipeline.writer import WRITER_GROUP
    from altm.store import MemoryReader, ShardSet

    prefix = f"w{uuid.uuid4().hex[:10]}."
    turns = _turns(range(0, 3))
    await _publish(kafka_bootstrap, prefix, turns, create=True)

    def runtime(data_dir: Path) -> tuple[KafkaRuntime, ShardSet]:
        # derivation yields to the searchable path for one batch at most: the stages are never held back long
        settings = Settings(data_dir=data_dir, partitions=4, broker=f"kafka://{kafka_bootstrap}", topic_prefix=prefix,
                            embedder="none", worker_session_timeout_s=6, derive_every_steps=1)
        shards = ShardSet(settings.data_dir, 4)
        ctx = ProcessorContext(settings=settings, reader=MemoryReader(shards))
        return KafkaRuntime(settings, shards, ctx, default_processors(), "log-id"), shards

    async def until_idle(data_dir: Path, worker: tuple[KafkaRuntime, ShardSet]) -> None:
        """The worker started, run until it holds every turn and the group is idle, then stopped."""
        runtime, its_shards = worker
        await runtime.start()
        try:
            await _until_l0(data_dir, len(turns))
            await wait_until_idle(kafka_bootstrap, prefix, data_dir=data_dir)
        finally:
            await runtime.stop()
            its_shards.close()

    await until_idle(tmp_path / "worker-a", runtime(tmp_path / "worker-a"))
    await _rewind_group(kafka_bootstrap, prefix)

    second, shards = runtime(tmp_path / "worker-b")
    behind: list[str] = []
    read = 0

    def checked(handle: Handle) -> Handle:
        async def wrapped(records: Sequence[Record]) -> int:
            nonlocal read
            for rec in records:
                change = decode_event(rec.value)
                if not isinstance(change, ChangeEvent) or change.status is not ChangeStatus.COMMITTED:
                    continue
                read += 1
                assert change.source_topic is not None and change.source_offset is not None
                partition = change.source_partition or 0
                applied = shards.get(partition).next_offset(WRITER_GROUP, change.source_topic, partition)
                if applied is None or applied <= change.source_offset:
                    behind.append(f"{change.op} {change.memory_id}: proposal {partition}@{change.source_offset}, "
                                  f"shard applied up to {applied}")
            return await handle(records)
        return wrapped

    for stage in second.stages:
        if stage.processor.input_topic is Topic.CHANGES:
            monkeypatch.setattr(stage, "handle", checked(stage.handle))
    writer_handle = second.writer.handle

    async def slow_writer(records: Sequence[Record]) -> int:  # the writer lane behind the stages, as under load
        await asyncio.sleep(1.0)
        return await writer_handle(records)

    monkeypatch.setattr(second.writer, "handle", slow_writer)
    await until_idle(tmp_path / "worker-b", (second, shards))
    assert read > 0, "the stages read none of the first worker's changes"
    assert not behind, f"{len(behind)} of {read} changes read over a shard that had not applied them: {behind[:3]}"
    assert state_hash(tmp_path / "worker-b") == await _embedded_state(tmp_path, turns)
