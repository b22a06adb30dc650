from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from altm.bus import BusError, OutgoingRecord, TopicPartition
from altm.bus.embedded import EmbeddedLog
from altm.core import TopicSpec, partition_for


async def _log(path: Path, partitions: int = 4) -> EmbeddedLog:
    log = EmbeddedLog(path)
    await log.start()
    await log.ensure_topics([TopicSpec("t", partitions), TopicSpec("u", partitions)])
    return log


async def test_keyed_records_keep_order_per_partition(tmp_path: Path) -> None:
    log = await _log(tmp_path / "log.db")
    keys = [f"tenant/ws/user{i % 5}" for i in range(100)]
    metas = await log.publish_many(
        [OutgoingRecord("t", f"{k}|{i}".encode(), key=k) for i, k in enumerate(keys)]
    )
    for meta, key in zip(metas, keys, strict=True):
        assert meta.partition == partition_for(key, 4)
    consumer = log.consumer("g", ["t"])
    await consumer.start()
    records = await consumer.poll(1000)
    assert len(records) == 100
    per_key: dict[str, list[int]] = {}
    for rec in records:
        assert rec.key is not None
        per_key.setdefault(rec.key, []).append(int(rec.value.decode().split("|")[1]))
    for seq in per_key.values():
        assert seq == sorted(seq)
    for tp in {r.tp for r in records}:
        offs = [r.offset for r in records if r.tp == tp]
        assert offs == list(range(len(offs)))
    await log.stop()


async def test_headers_and_explicit_partition(tmp_path: Path) -> None:
    log = await _log(tmp_path / "log.db")
    meta = await log.publish_many([OutgoingRecord("t", b"v", key="k", headers=(("h", b"\x00\x01"),), partition=3)])
    assert meta[0].partition == 3
    (rec,) = log.read(TopicPartition("t", 3), 0, 10)
    assert rec.headers == (("h", b"\x00\x01"),) and rec.key == "k" and rec.value == b"v"
    with pytest.raises(BusError, match="out of range"):
        await log.publish_many([OutgoingRecord("t", b"v", partition=9)])
    with pytest.raises(BusError, match="unknown topic"):
        await log.publish("nope", b"v", key="k")
    await log.stop()


async def test_group_offsets_resume_and_replay_from_zero(tmp_path: Path) -> None:
    log = await _log(tmp_path / "log.db", partitions=1)
    await log.publish_many([OutgoingRecord("t", str(i).encode(), key="k") for i in range(10)])
    c = log.consumer("g", ["t"])
    await c.start()
    first = await c.poll(4)
    assert [r.value for r in first] == [b"0", b"1", b"2", b"3"]
    await c.commit({TopicPartition("t", 0): 4})
    await c.stop()

    c2 = log.consumer("g", ["t"])  # same group resumes after the commit
    await c2.start()
    assert [r.value for r in await c2.poll(100)] == [str(i).encode() for i in range(4, 10)]
    assert await c2.committed(TopicPartition("t", 0)) == 4

    other = log.consumer("other", ["t"])  # a new group starts at 0
    await other.start()
    assert len(await other.poll(100)) == 10

    await c2.seek(TopicPartition("t", 0), 0)  # replay from 0
    assert len(await c2.poll(100)) == 10
    await log.stop()


async def test_reopen_after_crash_keeps_committed_records(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_write_then_die, args=(str(path),))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 17  # died without closing anything
    log = EmbeddedLog(path)
    await log.start()  # the lock died with the process; the WAL is recovered
    ends = await log.end_offsets([TopicPartition("t", 0)])
    assert ends[TopicPartition("t", 0)] == 50
    (meta,) = await log.publish_many([OutgoingRecord("t", b"after", key="k")])
    assert meta.offset == 50
    await log.stop()


def _write_then_die(path: str) -> None:
    import asyncio
    import os

    async def main() -> None:
        log = EmbeddedLog(path)
        await log.start()
        await log.ensure_topics([TopicSpec("t", 1)])
        for i in range(50):
            await log.publish("t", str(i).encode(), key="k")
        os._exit(17)

    asyncio.run(main())


async def test_single_writer_concurrent_readers(tmp_path: Path) -> None:
    log = await _log(tmp_path / "log.db")
    with pytest.raises(BusError, match="open for writing by another process"):
        second = EmbeddedLog(tmp_path / "log.db")
        # flock is per open file description, so a second open in this process conflicts too
        await second.start()
    reader = EmbeddedLog(tmp_path / "log.db", read_only=True)
    await reader.start()
    await log.publish("t", b"x", key="k")
    assert reader.count("t") == 1
    with pytest.raises(BusError, match="read-only"):
        await reader.publish("t", b"y", key="k")
    await reader.stop()
    await log.stop()


async def test_partition_count_mismatch_is_refused(tmp_path: Path) -> None:
    log = await _log(tmp_path / "log.db", partitions=4)
    with pytest.raises(BusError, match="exists with 4 partitions"):
        await log.ensure_topics([TopicSpec("t", 8)])
    await log.stop()


async def test_retention_deletes_old_records_but_keeps_offsets(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log.db")
    await log.start()
    await log.ensure_topics([TopicSpec("dlq", 1, retention_ms=1000), TopicSpec("t", 1)])
    await log.publish_many([OutgoingRecord("dlq", b"old", key="k"), OutgoingRecord("t", b"keep", key="k")])
    import time

    deleted = log.apply_retention(now_ms=int(time.time() * 1000) + 5000)
    assert deleted == 1
    assert log.count("dlq") == 0 and log.count("t") == 1  # topics without retention keep everything
    assert log.log_start_offset(TopicPartition("dlq", 0)) == 1
    (meta,) = await log.publish_many([OutgoingRecord("dlq", b"new", key="k")])
    assert meta.offset == 1  # offsets never go back
    c = log.consumer("g", ["dlq"])
    await c.start()
    assert [r.value for r in await c.poll()] == [b"new"]
    await log.stop()


async def test_poll_waits_for_new_data(tmp_path: Path) -> None:
    import asyncio

    log = await _log(tmp_path / "log.db", partitions=1)
    c = log.consumer("g", ["t"])
    await c.start()

    async def later() -> None:
        await asyncio.sleep(0.05)
        await log.publish("t", b"late", key="k")

    task = asyncio.create_task(later())
    records = await c.poll(10, timeout_s=2.0)
    await task
    assert [r.value for r in records] == [b"late"]
    await log.stop()
