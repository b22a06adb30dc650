"""The writer's gap fill (issue 13): a shard that misses proposals before the ones it is handed applies them
first, read from the log, in order; a range the log no longer holds is skipped loudly, not silently."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from altm.bus import OutgoingRecord, Record
from altm.core import Settings, Topic, encode, partition_for, topic_name
from altm.pipeline import WriterDriver
from altm.pipeline.processors import CaptureProcessor, ProcessorContext
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, ShardSet
from tests.support.rows import rows
from tests.support.turns import make_turn


async def _log(settings: Settings, n: int) -> list[Record]:
    """``n`` capture proposals of one user on one partition of the proposals topic, at offsets 0..n-1."""
    topic = topic_name(Topic.PROPOSALS, settings.topic_prefix)
    out = []
    for i in range(n):
        (prop,) = await CaptureProcessor().process(make_turn(i + 1), ProcessorContext(settings=settings))
        out.append(Record(topic, partition_for(prop.key, settings.partitions), i, prop.key, encode(prop)))
    return out


async def _nowhere(records: Sequence[OutgoingRecord]) -> None:
    return None


async def test_a_gap_before_a_batch_is_filled_from_the_log_in_order(settings: Settings) -> None:
    log = await _log(settings, 6)
    fetched: list[tuple[int, int]] = []

    async def fetch(partition: int, start: int, end: int) -> list[Record]:
        fetched.append((start, end))
        return [r for r in log if start <= r.offset < end][:2]  # two per chunk: the fill loops

    shards = ShardSet(settings.data_dir, settings.partitions)
    driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), _nowhere, "log", fetch)
    await driver.handle(log[4:])  # a worker handed offsets 4 and 5 of a partition its shard never had
    order = [r["source_id"] for r in rows(settings.data_dir, "SELECT source_id FROM memories ORDER BY rowid")]
    shards.close()
    assert fetched == [(0, 4), (2, 4)]
    assert order == [f"s1-t{i}" for i in range(1, 7)]
    assert driver.restored == {log[0].partition: 4}


async def test_a_range_the_log_no_longer_holds_is_reported(settings: Settings,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    log = await _log(settings, 6)

    async def fetch(partition: int, start: int, end: int) -> list[Record]:
        return [r for r in log if max(start, 3) <= r.offset < end]  # retention removed offsets 0..2

    shards = ShardSet(settings.data_dir, settings.partitions)
    driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), _nowhere, "log", fetch)
    with caplog.at_level(logging.ERROR):
        await driver.handle(log[5:])
    stored = len(rows(settings.data_dir, "SELECT 1 FROM memories"))
    shards.close()
    assert stored == 3  # offsets 3, 4 and 5
    assert any("misses offsets 0..2" in r.getMessage() for r in caplog.records)
