"""Against the real Apache Kafka broker started by scripts/kafka.sh (KRaft, 127.0.0.1)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from pathlib import Path

import pytest

from altm.app.ingest import IngestSummary, publish_file
from altm.bus import OutgoingRecord, Record, TopicPartition
from altm.bus.kafka import GroupMember, KafkaBus
from altm.core import TopicSpec, all_topic_specs, partition_for
from altm.core.settings import Settings
from altm.interfaces.cli import sample_path
from altm.store import count_layer
from altm.wiring import state_hash
from tests.support.memories import running
from tests.support.workers import start_worker, stop, wait_until_idle

pytestmark = pytest.mark.kafka


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}."


async def test_publish_consume_commit_and_resume(kafka_bootstrap: str) -> None:
    prefix = _prefix()
    topic = f"{prefix}turns"
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics([TopicSpec(topic, 4)])
        keys = [f"tenant/ws/user{i % 7}" for i in range(40)]
        metas = await bus.publish_many(
            [OutgoingRecord(topic, f"{i}".encode(), key=k, headers=(("h", b"v"),))
             for i, k in enumerate(keys)]
        )
        assert [m.partition for m in metas] == [partition_for(k, 4) for k in keys]

        consumer = bus.consumer(f"{prefix}group", [topic])
        await consumer.start()
        got: list[Record] = []
        deadline = time.monotonic() + 30
        while len(got) < 40 and time.monotonic() < deadline:
            got.extend(await consumer.poll(100, timeout_s=1.0))
        assert sorted(int(r.value) for r in got) == list(range(40))
        assert all(r.headers == (("h", b"v"),) for r in got)
        for key in set(keys):  # order per key is preserved
            seq = [int(r.value) for r in got if r.key == key]
            assert seq == sorted(seq)
        half = {r.tp: r.offset + 1 for r in got if int(r.value) < 20}
        await consumer.commit(half)
        await consumer.stop()

        again = bus.consumer(f"{prefix}group", [topic])
        await again.start()
        rest: list[Record] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(rest) < 40 - sum(half.values()):
            rest.extend(await again.poll(100, timeout_s=1.0))
        for tp, committed in half.items():
            assert await again.committed(tp) == committed
        assert all(r.offset >= half.get(r.tp, 0) for r in rest)
        assert len(rest) == 40 - sum(half.values())
        await again.seek(TopicPartition(topic, metas[0].partition), 0)  # replay from an offset
        replayed = await again.poll(100, timeout_s=5.0)
        assert any(r.offset == 0 for r in replayed)
        await again.stop()
        ends = await bus.end_offsets([TopicPartition(topic, p) for p in range(4)])
        assert sum(ends.values()) == 40
    finally:
        await bus.stop()


class _Quiet:
    async def revoked(self, tps: frozenset[TopicPartition]) -> None:
        return None

    async def assigned(self, tps: frozenset[TopicPartition]) -> None:
        return None


async def test_a_group_member_reads_many_committed_offsets_in_one_request(kafka_bootstrap: str) -> None:
    """What a standby tick asks for: the committed offsets of many partitions, None where none was committed,
    equal to what ``committed`` says of each."""
    prefix = _prefix()
    topic = f"{prefix}proposals"
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics([TopicSpec(topic, 3)])
        await bus.publish_many([OutgoingRecord(topic, b"x", key=f"t/w/u{i}") for i in range(30)])
    finally:
        await bus.stop()
    member = GroupMember(kafka_bootstrap, f"{prefix}workers", [topic], _Quiet())
    await member.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        deadline = time.monotonic() + 30
        while len(member.assignment()) < 3 and time.monotonic() < deadline:
            await member.fetch(0.5)
        await member.commit({tps[0]: 1, tps[1]: 2})
        many = await member.committed_many(tps)
        assert many == {tps[0]: 1, tps[1]: 2, tps[2]: None}
        assert many == {tp: await member.committed(tp) for tp in tps}
        assert await member.committed_many([]) == {}
    finally:
        await member.stop()


async def test_topic_partition_mismatch_is_refused(kafka_bootstrap: str) -> None:
    prefix = _prefix()
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics([TopicSpec(f"{prefix}x", 2)])
        with pytest.raises(Exception, match="exists with 2 partitions"):
            await bus.ensure_topics([TopicSpec(f"{prefix}x", 3)])
    finally:
        await bus.stop()


def _shard_l0_count(data_dir: Path) -> int:
    return count_layer(data_dir, "L0")


async def test_faust_worker_captures_turns_like_the_embedded_runtime(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix = _prefix()
    settings = Settings(data_dir=tmp_path / "kafka", partitions=4, topic_prefix=prefix,
                        broker=f"kafka://{kafka_bootstrap}")
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        summary = IngestSummary()
        await publish_file(bus, settings, sample_path(), summary)
        assert summary.published == 29
    finally:
        await bus.stop()

    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix}
    worker = start_worker(kafka_bootstrap, settings.data_dir, env, capture=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and _shard_l0_count(settings.data_dir) < 29:
            assert worker.poll() is None, worker.stdout.read().decode() if worker.stdout else ""
            await asyncio.sleep(0.5)
        assert _shard_l0_count(settings.data_dir) == 29
        await wait_until_idle(kafka_bootstrap, prefix, worker, data_dir=settings.data_dir)
        with pytest.raises(OSError):  # faust's web server (default 0.0.0.0:6066) is off
            socket.create_connection(("127.0.0.1", 6066), timeout=1).close()
    finally:
        (out,) = stop(worker)
    assert b"0.0.0.0" not in out  # no web server on all interfaces

    embedded = Settings(data_dir=tmp_path / "embedded", partitions=4)
    async with running(embedded) as rt:
        from altm.app.ingest import ingest_file

        await ingest_file(rt, sample_path())
    assert state_hash(settings.data_dir) == state_hash(embedded.data_dir)


async def test_a_worker_reads_ranges_of_the_log_through_one_kept_consumer(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read of the proposals log (a restore's chunk, a standby copy's tick) started a consumer of its own:
    30 ms and 4.6 ms of CPU per read here, for every partition a standby worker does not own, every 2 s."""
    from aiokafka import AIOKafkaConsumer

    import altm.bus.kafka._bus as kafka_bus
    from altm.pipeline import ProcessorContext, default_processors
    from altm.pipeline.runtime.kafka import KafkaRuntime
    from altm.store import ShardSet

    prefix = _prefix()
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker=f"kafka://{kafka_bootstrap}",
                        topic_prefix=prefix, embedder="none", worker_session_timeout_s=6)
    proposals = f"{prefix}proposals"
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        await bus.ensure_topics(all_topic_specs(4, prefix))
        metas = await bus.publish_many([OutgoingRecord(proposals, f"{i}".encode(), key=f"t/w/u{i % 8}")
                                        for i in range(40)])
    finally:
        await bus.stop()
    made: list[object] = []
    real = AIOKafkaConsumer  # the class the adapter makes its consumers of

    def counted(*args: object, **kwargs: object) -> object:
        made.append(args)
        return real(*args, **kwargs)

    shards = ShardSet(settings.data_dir, 4)
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    await rt.start()
    try:
        monkeypatch.setattr(kafka_bus, "AIOKafkaConsumer", counted)
        read = {p: await rt._fetch_proposals(p, 0, 100) for p in range(4)}
        read_again = await asyncio.gather(*(rt._fetch_proposals(p, 1, 3) for p in range(4)))  # reads together
    finally:
        monkeypatch.setattr(kafka_bus, "AIOKafkaConsumer", real)
        await rt.stop()
        shards.close()
    for p in range(4):
        assert [r.value for r in read[p]] == [f"{m_i}".encode() for m_i, m in enumerate(metas) if m.partition == p]
        assert [r.offset for r in read_again[p]] == [o for o in (1, 2) if o < len(read[p])]
    assert made == [], f"{len(made)} consumers started for 8 reads of the log"
