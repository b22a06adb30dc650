"""Embed work that is retried out of the stage's own order (deferred: an embedding endpoint that failed) must
not overwrite what a later change of the same memory put in the index: a capsule is folded again with new
text under the same id, and the retry of its first version upserted the old vector over the new one."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from altm.bus import OutgoingRecord, Record
from altm.core import (
    ChangeEvent,
    ChangeStatus,
    Deferred,
    Forget,
    ForgetProposal,
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Settings,
    encode,
    partition_for,
)
from altm.pipeline import ProcessorContext, StageDriver
from altm.pipeline.processors import CaptureProcessor, EmbedProcessor, upsert_proposal
from altm.pipeline.processors._base import derived_memory
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, MemoryReader, ShardSet
from altm.vectors.edge import EdgeVectorIndex
from tests.support.turns import SCOPE, make_turn

AT = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in digest[:4]]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class _Flaky:
    """An embedding endpoint that fails its first ``failures`` calls (as the remote model's client says)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.failures > 0:
            self.failures -= 1
            raise Deferred("embedding call failed: APIConnectionError: connection refused")
        return [_vector(t) for t in texts]


class _Setup:
    def __init__(self, settings: Settings, tmp: Path) -> None:
        self.settings = settings.model_copy(update={"defer_backoff_s": 0.0})
        self.shards = ShardSet(self.settings.data_dir, self.settings.partitions)
        self.writer = Writer(self.shards, self.settings)
        self.index = EdgeVectorIndex(tmp / "vectors", "test", 4)
        self.index.open()
        self.offset = 0

    def commit(self, mem: MemoryUnit) -> ChangeEvent:
        """``mem`` through the writer; its committed change."""
        prop = upsert_proposal(mem, processor="fold", cause=make_turn(1, "hello there"))
        rec = Record("altm.proposals", partition_for(prop.key, self.settings.partitions), self.offset, prop.key,
                     encode(prop))
        self.offset += 1
        (change,) = self.writer.apply(rec, self.settings.partitions).changes
        assert change.status is ChangeStatus.COMMITTED
        return change

    def record(self, change: ChangeEvent) -> Record:
        self.offset += 1
        return Record("altm.changes", partition_for(change.key, self.settings.partitions), self.offset,
                      change.key, encode(change))

    def close(self) -> None:
        self.index.close()
        self.shards.close()


@pytest.fixture
def setup(settings: Settings, tmp_path: Path) -> Iterator[_Setup]:
    s = _Setup(settings, tmp_path)
    yield s
    s.close()


def _capsule(evidence: str, content: str) -> MemoryUnit:
    return derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L1, kind=Kind.CAPSULE, content=content,
                          evidence=[evidence], processor="fold", method=Method.HEURISTIC, id_parts=["s1"],
                          valid_from=AT)


async def _driver(setup: _Setup, embedder: _Flaky) -> tuple[StageDriver, list[OutgoingRecord]]:
    sent: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        sent.extend(records)

    embed = EmbedProcessor(embedder, setup.index)  # type: ignore[arg-type]
    ctx = ProcessorContext(settings=setup.settings, reader=MemoryReader(setup.shards))
    return StageDriver(embed, ctx, DeferredWork(setup.shards, setup.settings), publish), sent


async def _message(setup: _Setup) -> str:
    (prop,) = await CaptureProcessor().process(make_turn(1, "hello there"), ProcessorContext(settings=setup.settings))
    rec = Record("altm.proposals", partition_for(prop.key, setup.settings.partitions), setup.offset, prop.key,
                 encode(prop))
    setup.offset += 1
    (change,) = setup.writer.apply(rec, setup.settings.partitions).changes
    assert change.memory is not None
    return change.memory.memory_id


async def test_a_deferred_embedding_retried_after_a_newer_version_keeps_the_newer_vector(setup: _Setup) -> None:
    message = await _message(setup)
    first = setup.commit(_capsule(message, "the session so far: a trip to Lisbon"))
    second = setup.commit(_capsule(message, "the session so far: a trip to Lisbon, then a move to Porto"))
    assert first.memory_id == second.memory_id and second.memory is not None
    driver, sent = await _driver(setup, _Flaky(failures=1))
    await driver.handle([setup.record(first)])  # the endpoint fails: the first version is deferred
    assert driver.work.count() == 1
    await driver.handle([setup.record(second)])  # the endpoint is back: the second version is indexed
    assert await driver.retry_due() == 1  # the first version's retry
    mid = second.memory.memory_id
    point = setup.index.points([mid])[mid]
    assert point.payload["content_hash"] == second.memory.content_hash  # on main: the first version's
    assert _unit(point.vector) == pytest.approx(_unit(_vector(second.memory.content)), abs=1e-3)
    assert driver.work.count() == 0 and sent == []


async def test_a_deferred_embedding_of_a_memory_erased_since_leaves_no_point(setup: _Setup) -> None:
    message = await _message(setup)
    change = setup.commit(_capsule(message, "the session so far: a trip to Lisbon"))
    assert change.memory is not None
    mid = change.memory.memory_id
    driver, _ = await _driver(setup, _Flaky(failures=1))
    await driver.handle([setup.record(change)])
    assert driver.work.count() == 1
    shard = setup.shards.get(partition_for(SCOPE.home, setup.settings.partitions))
    with shard.transaction() as tx:  # gone from the shard before the retry (its own erasure change follows)
        row = tx.memory_row(mid)
        assert row is not None
        tx.delete_memory(row, at=AT.isoformat(), proposal_id="p-erase", actor="test")
    assert await driver.retry_due() == 1
    assert setup.index.points([mid]) == {}


def _id(change: ChangeEvent) -> str:
    assert change.memory_id is not None
    return change.memory_id


class _Poisoned:
    """A local embedder that breaks on one text (a bug in a tokenizer, say), on every try."""

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        if any("poison" in t for t in texts):
            raise ValueError("tokenizer failed on a text")
        return [_vector(t) for t in texts]


async def test_a_memory_that_breaks_embed_on_every_try_is_kept_aside_and_the_partition_goes_on(
        setup: _Setup) -> None:
    """On main the stage raised on every try: the runtime retried the same batch for ever (an embedded ingest
    stopped there), and nothing after it in the partition became searchable."""
    message = await _message(setup)
    changes = [setup.commit(derived_memory(
        scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content=text, evidence=[message],
        processor="extract", method=Method.HEURISTIC, id_parts=[text], valid_from=AT))
        for text in ("Ana lives in Lisbon", "a poison text", "Ben moved to Porto")]
    ids = [_id(c) for c in changes]
    driver, sent = await _driver(setup, _Poisoned())  # type: ignore[arg-type]
    assert await driver.handle([setup.record(c) for c in changes]) == 3
    assert set(setup.index.points(ids)) == {ids[0], ids[2]}
    (kept,) = driver.work.pending({partition_for(SCOPE.home, setup.settings.partitions)})
    assert kept.stage == "embed" and b"poison" in kept.value and sent == []  # kept for a retry, not dead-lettered
    assert await driver.retry_due() == 0 and driver.work.count() == 1  # it still fails: still kept


async def test_a_batch_whose_first_record_also_fails_alone_is_kept_aside_whole(setup: _Setup) -> None:
    """The vector index away: the batch fails, and so does its first record alone. The others are not tried
    one by one against an index that does not answer: the whole batch is kept, nothing dead-lettered, and each
    is embedded when it is tried again with the index back."""
    message = await _message(setup)
    changes = [setup.commit(_capsule(message, f"the session so far, version {i}")) for i in range(2)]
    calls = 0

    class _Away(_Poisoned):
        async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
            nonlocal calls
            calls += 1
            raise ConnectionError("the embedding server does not answer")

    driver, sent = await _driver(setup, _Away())  # type: ignore[arg-type]
    other = setup.commit(derived_memory(
        scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content="Ana lives in Lisbon",
        evidence=[message], processor="extract", method=Method.HEURISTIC, id_parts=["ana"], valid_from=AT))
    assert await driver.handle([setup.record(c) for c in (*changes, other)]) == 3
    assert calls == 2 and driver.work.count() == 3 and sent == []
    driver.processor.embedding = _Flaky(failures=0)  # type: ignore[attr-defined]
    assert await driver.retry_due() == 3 and driver.work.count() == 0
    assert set(setup.index.points([_id(changes[1]), _id(other)])) == {_id(changes[1]), _id(other)}


class _DownThenUp:
    def __init__(self) -> None:
        self.down = False

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.down:
            raise ConnectionError("the embedding server does not answer")
        return [_vector(t) for t in texts]


def _forget(setup: _Setup, mid: str) -> ChangeEvent:
    prop = ForgetProposal(event_id="forget-capsule", scope=SCOPE, timestamp=make_turn(8).timestamp,
                          processor="lifecycle", forget=Forget(memory_ids=(mid,), reason="past retention"))
    rec = Record("altm.proposals", partition_for(prop.key, setup.settings.partitions), setup.offset, prop.key,
                 encode(prop))
    setup.offset += 1
    (change,) = [c for c in setup.writer.apply(rec, setup.settings.partitions).changes
                 if c.status is ChangeStatus.COMMITTED and c.removed_ids]
    assert mid in change.removed_ids
    return change


async def test_a_deferred_removal_retried_after_the_memory_is_stored_again_keeps_its_point(setup: _Setup) -> None:
    """From the review: a capsule forgotten (no tombstone) and folded again under its id; the forget's change
    was kept aside with its batch (the endpoint away), and its retry deleted the new capsule's point."""
    message = await _message(setup)
    first = setup.commit(_capsule(message, "the session so far: a trip to Lisbon"))
    capsule = _id(first)
    embedder = _DownThenUp()
    driver, _ = await _driver(setup, embedder)  # type: ignore[arg-type]
    await driver.handle([setup.record(first)])
    fact = setup.commit(derived_memory(
        scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content="Ana lives in Lisbon",
        evidence=[message], processor="extract", method=Method.HEURISTIC, id_parts=["ana"], valid_from=AT))
    forgot = _forget(setup, capsule)
    embedder.down = True  # the batch fails, and so does its first record alone: the forget is kept untried
    await driver.handle([setup.record(fact), setup.record(forgot)])
    assert driver.work.count() == 2
    embedder.down = False
    again = setup.commit(_capsule(message, "the session so far: a trip to Lisbon, then Porto"))
    assert _id(again) == capsule
    await driver.handle([setup.record(again)])
    assert await driver.retry_due() == 2  # the fact, then the forget's removal
    assert MemoryReader(setup.shards).get(SCOPE, capsule) is not None
    assert set(setup.index.points([capsule])) == {capsule}  # on the first fix: deleted


async def test_embed_work_handed_over_by_a_partitions_previous_owner_writes_what_the_shard_holds(
        setup: _Setup) -> None:
    """From the review: a partition that moves has its deferred work published again to its topic, and the new
    owner handled it as a new change, as the record carried it: a memory erased meanwhile got its point back."""
    message = await _message(setup)
    change = setup.commit(_capsule(message, "the session so far: a trip to Lisbon"))
    mid = _id(change)
    old_owner, _ = await _driver(setup, _Flaky(failures=1))
    await old_owner.handle([setup.record(change)])  # deferred on the old owner
    (item,) = old_owner.work.pending({partition_for(SCOPE.home, setup.settings.partitions)})
    shard = setup.shards.get(partition_for(SCOPE.home, setup.settings.partitions))
    with shard.transaction() as tx:  # erased meanwhile
        row = tx.memory_row(mid)
        assert row is not None
        tx.delete_memory(row, at=AT.isoformat(), proposal_id="p-erase", actor="test")
    old_owner.work.done(item)  # handed over: published again to the changes topic, handled by the new owner
    new_owner, _ = await _driver(setup, _Flaky(failures=0))
    setup.offset += 1
    await new_owner.handle([Record("altm.changes", item.partition, setup.offset, item.key, item.value,
                                   timestamp_ms=item.timestamp_ms)])
    assert setup.index.points([mid]) == {}
