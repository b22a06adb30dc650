"""Standby copies (issue 13, ``ALTM_WORKER_STANDBY``), without a broker: a worker keeps the shard of every
partition it does not own up to what the owner committed, read from the proposals log as a restore reads it,
and publishes nothing of it (the owner did); a partition it is given then restores only what came after."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from altm.bus import OutgoingRecord, Record, TopicPartition, source_header
from altm.bus.sealing import DERIVED, Owner, Sealer, SqliteKeyStore
from altm.core import (
    ChangeEvent,
    EraseProposal,
    Erasure,
    Forget,
    ForgetProposal,
    Settings,
    Topic,
    UpsertMemoryProposal,
    decode_event,
    encode,
    topic_name,
)
from altm.models import EmbeddingModel
from altm.pipeline import WriterDriver
from altm.pipeline._drivers import HOLD_ATTEMPTS, Fetch
from altm.pipeline._metrics import FRESHNESS_SECONDS, WRITER_PROPOSALS
from altm.pipeline.processors import CaptureProcessor, ProcessorContext, default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, ShardSet
from altm.vectors import VectorPoint
from altm.vectors.edge import EdgeVectorIndex
from tests.support.lanes import Member
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn
from tests.unit.pipeline.test_burial import _erased_deployment
from tests.unit.pipeline.test_writer_restore import _log


def _reading(log: Sequence[Record]) -> Fetch:
    """``fetch`` over ``log`` (the proposals log as the broker holds it), every record of a range at once."""
    async def fetch(p: int, start: int, end: int) -> list[Record]:
        return [r for r in log if r.partition == p and start <= r.offset < end]

    return fetch


async def _upsert_then_forget(settings: Settings) -> tuple[list[Record], str]:
    """A capture proposal of memory A (offset 0) and a forget of A (offset 1) on one partition; A's id."""
    (a,) = await _log(settings, 1)
    prop = decode_event(a.value)
    assert isinstance(prop, UpsertMemoryProposal)
    forget = ForgetProposal(event_id="forget-a", scope=SCOPE, timestamp=make_turn(8).timestamp,
                            processor="lifecycle", forget=Forget(memory_ids=(prop.memory.memory_id,),
                                                                 reason="past retention"))
    return [a, Record(a.topic, a.partition, 1, SCOPE.home, encode(forget))], prop.memory.memory_id


def _undecided(self: Any, tx: Any, mem: Any) -> Any:
    """``WriteGuard._tombstone`` when the guard cannot decide (its index away): the proposal is deferred."""
    raise RuntimeError("the guard's index is away")


def _stored(data_dir: Path) -> list[str]:
    return [r["source_id"] for r in rows(data_dir, "SELECT source_id FROM memories ORDER BY rowid")]


class _Embedded:
    def __init__(self) -> None:
        self.changes: list[ChangeEvent] = []

    async def __call__(self, changes: Sequence[ChangeEvent]) -> None:
        self.changes += changes


class _Published:
    def __init__(self) -> None:
        self.records: list[OutgoingRecord] = []

    async def __call__(self, records: Sequence[OutgoingRecord]) -> None:
        self.records += records


async def test_a_standby_copy_applies_what_the_owner_committed_and_publishes_none_of_it(settings: Settings) -> None:
    log = await _log(settings, 6)

    fetch = _reading(log)

    shards = ShardSet(settings.data_dir, settings.partitions)
    published, handed = _Published(), _Embedded()
    writer = Writer(shards, settings)
    transactions: list[int] = []
    apply_batch = writer.apply_batch

    def counted(records: Sequence[Record], *args: Any, **kwargs: Any) -> Any:
        transactions.append(len(records))
        return apply_batch(records, *args, **kwargs)

    writer.apply_batch = counted  # type: ignore[method-assign]
    driver = WriterDriver(writer, DeferredWork(shards, settings), published, "log", fetch)
    partition = log[0].partition
    applied = [await driver.follow(partition, 4, handed, transaction=3),
               await driver.follow(partition, 4, handed, transaction=3)]
    outbox = shards.get(partition).outbox_depth()
    shards.close()
    assert applied == [4, 0]  # up to what the owner committed (offset 4), nothing twice
    assert transactions == [3, 1]  # one chunk read from the log, applied in transactions of at most 3
    assert _stored(settings.data_dir) == [f"s1-t{i}" for i in range(1, 5)]
    assert published.records == []  # the owner published these changes before it committed offset 4
    assert len(handed.changes) == 4  # for this worker's own embedder
    assert outbox == 0  # nothing of it in the outbox either
    assert driver.restored == {}  # a standby copy is not a restore


@pytest.fixture
def standby(tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                        worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    rt = KafkaRuntime(settings, shards, ProcessorContext(settings=settings), default_processors(), "log-id")
    yield rt
    shards.close()


async def test_a_worker_keeps_warm_copies_of_the_partitions_it_does_not_own(standby: Any) -> None:
    log = await _log(standby.settings, 6)
    partition = log[0].partition
    other = (partition + 1) % standby.partitions
    proposals = topic_name(Topic.PROPOSALS, standby.settings.topic_prefix)
    owned = TopicPartition(proposals, other)
    standby._member = Member({owned}, committed=5)  # the owners have committed offset 5 of every partition
    await standby.assigned(frozenset({owned}))
    fetched: list[tuple[int, int, int]] = []

    async def fetch(p: int, start: int, end: int) -> list[Record]:
        fetched.append((p, start, end))
        return [r for r in log if r.partition == p and start <= r.offset < end]

    published = _Published()
    standby.writer.fetch = fetch
    standby.bus.publish_many = published
    await standby._follow_unowned()
    assert _stored(standby.settings.data_dir) == [f"s1-t{i}" for i in range(1, 6)]
    assert standby.standby.applied == {partition: 5}
    assert other not in {p for p, _, _ in fetched}  # its own partition is its lanes' (and its restore's)
    assert published.records == []
    await standby._follow_unowned()  # nothing new committed: nothing read again
    assert standby.standby.applied == {partition: 5} and len([f for f in fetched if f[0] == partition]) == 1

    taken = TopicPartition(proposals, partition)  # then the partition is given to this worker
    standby._member = Member({owned, taken}, committed=6)
    await standby.assigned(frozenset({owned, taken}))
    await standby._restored(partition)
    assert fetched[-1] == (partition, 5, 6)  # the restore has only the last proposal left
    assert _stored(standby.settings.data_dir) == [f"s1-t{i}" for i in range(1, 7)]
    assert standby.writer.restored == {partition: 1}
    assert published.records  # and what it restores is published, as a restore publishes it


async def test_changes_left_from_owning_the_partition_wait_for_the_worker_to_own_it_again(settings: Settings) -> None:
    """A batch the writer applied while this worker owned the partition, whose changes a rebalance kept from
    being published, is in the outbox. A standby copy neither publishes them (the next owner applies those
    proposals again and publishes its own) nor drops them: given the partition back at once, this worker skips
    those proposals (its shard has them), and its restore's flush publishes them."""
    log = await _log(settings, 3)
    shards = ShardSet(settings.data_dir, settings.partitions)
    published, handed = _Published(), _Embedded()

    async def refused(records: Sequence[OutgoingRecord]) -> None:
        raise ConnectionError("the rebalance cancelled the flush")

    fetch = _reading(log)

    owner = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), refused, "log", fetch)
    with pytest.raises(ConnectionError):
        await owner.handle(log)  # applied, not published: the group's committed offset stays 0
    partition = log[0].partition
    left = shards.get(partition).outbox_depth()
    driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), published, "log", fetch)
    applied = await driver.follow(partition, 0, handed, transaction=10)
    kept = shards.get(partition).outbox_depth()
    await driver.catch_up(partition, 0)  # given back: the restore has nothing to apply, then flushes
    await driver.flush(partition)
    shards.close()
    assert left > 0 and applied == 0 and kept == left
    assert handed.changes == []
    assert len(published.records) == left


def shards_outbox(rt: Any) -> int:
    return sum(rt.shards.get(p).outbox_depth() for p in range(rt.partitions))


class _Toy(EmbeddingModel):
    """A deterministic stand-in for the local embedder (no model files needed); ``down``: it fails."""

    model_id = "toy"
    dim = 8
    down = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.down:
            raise ConnectionError("the embedding endpoint is away for a moment")
        out = []
        for text in texts:
            v = [float((hash(text) >> i) & 0xFF) + 1.0 for i in range(0, 64, 8)]
            norm = sum(x * x for x in v) ** 0.5
            out.append([x / norm for x in v])
        return out


async def test_a_standby_copy_embeds_what_it_applies_into_the_workers_own_index(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    embedding = _Toy()
    vectors = EdgeVectorIndex(tmp_path / "vectors", embedding.collection, embedding.dim)
    vectors.open()
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings),
                      default_processors(None, embedding, vectors), "log-id", vectors=vectors)
    try:
        log = await _log(settings, 3)
        rt._member = Member(set(), committed=3)  # owns nothing

        fetch = _reading(log)

        rt.writer.fetch = fetch
        published = _Published()
        rt.bus.publish_many = published
        await rt._follow_unowned()
        ids = [r["memory_id"] for r in rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L0'")]
        held = vectors.points(ids)
    finally:
        vectors.close()
        shards.close()
    assert len(ids) == 3 and set(held) == set(ids)  # searchable here the moment the partition is taken over
    assert published.records == []


@pytest.mark.parametrize("way", ["standby", "restore"])
async def test_applying_an_erasure_from_the_log_leaves_the_keys_made_after_it_alone(settings: Settings,
                                                                                   tmp_path: Path, way: str) -> None:
    """Found by a review: a standby copy (and a restore) applied the owner's erasure again through a writer
    holding the key store, 1-3 s later: it destroyed the session key the owner had made since for the session's
    next turns, and retired the derived key the owner's new scenes were sealed with (restores and replicas then
    took those records for shredded). Everything below the committed offset was shredded by its owner."""
    opened, _, keys = await _erased_deployment(settings)  # the owner applied the erasure of s-secret
    erase = next(r for r in opened if b'"op":"erase"' in r.value)
    log = [r for r in opened if r.partition == erase.partition]
    derived_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, DERIVED))  # the owner's next scene
    session_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, "s-secret"))  # the session goes on
    s = Settings(data_dir=tmp_path / "copy", partitions=settings.partitions, broker="kafka://127.0.0.1:1",
                 embedder="none", worker_standby=True, topic_prefix=settings.topic_prefix)
    shards = ShardSet(s.data_dir, s.partitions)
    rt: Any = KafkaRuntime(s, shards, ProcessorContext(settings=s), default_processors(), "log-id",
                           sealer=Sealer(keys))

    fetch = _reading(log)

    rt.writer.fetch = fetch
    rt.bus.publish_many = _Published()
    try:
        if way == "standby":
            owned = TopicPartition(topic_name(Topic.PROPOSALS, s.topic_prefix), (erase.partition + 1) % s.partitions)
            rt._member = Member({owned}, committed=log[-1].offset + 1)
            await rt.assigned(frozenset({owned}))
            await rt.standby.follow(erase.partition, log[-1].offset + 1)
        else:
            await rt.writer.catch_up(erase.partition, log[-1].offset + 1)
        erased_here = rows(s.data_dir, "SELECT 1 FROM tombstones")
        derived_retired, session_key = keys.retired(derived_kid), keys.get(session_kid)
    finally:
        shards.close()
        keys.close()
    assert erased_here  # the copy applied the erasure (its tombstones came with it)
    assert not derived_retired
    assert session_key is not None


def test_standby_copies_and_dropping_unowned_shards_exclude_each_other() -> None:
    with pytest.raises(ValidationError, match="set one of the two"):
        Settings(worker_standby=True, worker_drop_unowned_after_s=30)


def _count(metric: Any, **labels: str) -> float:
    for family in metric.collect():
        for sample in family.samples:
            if all(sample.labels.get(k) == v for k, v in labels.items()) and sample.name.endswith(("_total", "_count")):
                return float(sample.value)
    return 0.0


async def test_a_standby_copy_is_not_counted_as_the_writers_work(settings: Settings) -> None:
    """Found by a review: every worker added its copies to the writer's proposal counts, and their late storing
    (2-4 s behind) to the writer's freshness."""
    source = int(time.time() * 1000) - 3000
    log = [Record(r.topic, r.partition, r.offset, r.key, r.value, (source_header(source),))
           for r in await _log(settings, 4)]

    fetch = _reading(log)

    shards = ShardSet(settings.data_dir, settings.partitions)
    driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), _Published(), "log", fetch)
    before = (_count(WRITER_PROPOSALS, op="upsert_memory", status="committed"),
              _count(FRESHNESS_SECONDS, stage="writer", layer="L0"))
    applied = await driver.follow(log[0].partition, 4, _Embedded(), transaction=500)
    shards.close()
    after = (_count(WRITER_PROPOSALS, op="upsert_memory", status="committed"),
             _count(FRESHNESS_SECONDS, stage="writer", layer="L0"))
    assert applied == 4 and after == before


class _FlakyGuardKeys:
    """The key store's guard keys through a connection that may be away (the writer defers then)."""

    def __init__(self, keys: SqliteKeyStore) -> None:
        self.keys, self.down = keys, False

    def guard_key(self, home: str, adopt: bytes | None = None) -> bytes:
        if self.down:
            raise ConnectionError("the key store is away")
        return self.keys.guard_key(home, adopt)

    def find_guard_key(self, home: str) -> bytes | None:
        if self.down:
            raise ConnectionError("the key store is away")
        return self.keys.find_guard_key(home)


async def _session_log(settings: Settings) -> list[Record]:
    """Two messages of session s1, then its erasure, on one partition (offsets 0..2, an erasure's record time)."""
    log = await _log(settings, 2)
    erase = EraseProposal(event_id="erase-s1", scope=SCOPE, timestamp=make_turn(9).timestamp, processor="control",
                          erasure=Erasure(target="session", session_id="s1"))
    at_ms = int(time.time() * 1000)
    return [*log, Record(log[0].topic, log[0].partition, 2, SCOPE.home, encode(erase), timestamp_ms=at_ms)]


@pytest.mark.parametrize("way", ["restore", "standby"])
async def test_an_erasure_its_owner_deferred_is_shredded_by_the_shard_that_applies_it(tmp_path: Path,
                                                                                     way: str) -> None:
    """Found by a review: an erasure the owner deferred (its key store away) has its offset committed with no key
    destroyed; the owner's worker dies before the retry; a restore or standby copy applying it destroyed no key
    (it took everything below the committed offset for shredded), so the session's records stayed readable."""
    keys = SqliteKeyStore(tmp_path / "keys.db")
    s_a, s_b = (Settings(data_dir=tmp_path / d, partitions=4) for d in ("a", "b"))
    session_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, "s1"))  # what s1's records are sealed with
    await asyncio.sleep(0.002)
    log = await _session_log(s_a)
    shards_a, shards_b = ShardSet(s_a.data_dir, 4), ShardSet(s_b.data_dir, 4)

    fetch = _reading(log)

    try:
        guard = _FlakyGuardKeys(keys)
        guard.down = True
        work_a = DeferredWork(shards_a, s_a)
        owner = WriterDriver(Writer(shards_a, s_a, keys, guard_keys=guard), work_a, _Published(), "log")
        await owner.handle(log)  # handled: the group commits offset 3; the erasure waits for a retry
        assert work_a.count() == 1 and keys.get(session_kid) is not None
        newcomer = WriterDriver(Writer(shards_b, s_b, keys), DeferredWork(shards_b, s_b), _Published(), "log", fetch)
        if way == "standby":
            await newcomer.follow(log[0].partition, 3, _Embedded(), transaction=500)
        else:
            await newcomer.catch_up(log[0].partition, 3)
        destroyed = keys.get(session_kid) is None
    finally:
        shards_a.close()
        shards_b.close()
        keys.close()
    assert destroyed


async def test_an_erasure_a_standby_copy_deferred_leaves_the_keys_made_since_alone(tmp_path: Path) -> None:
    """Found by a review: the standby copy's deferral was retried at the takeover as a live erasure: it destroyed
    the session key the owner made after the erasure and retired the derived key of its new scenes."""
    keys = SqliteKeyStore(tmp_path / "keys.db")
    s_a = Settings(data_dir=tmp_path / "a", partitions=4)
    s_b = Settings(data_dir=tmp_path / "b", partitions=4, defer_backoff_s=0.0)
    log = await _session_log(s_a)
    shards_a, shards_b = ShardSet(s_a.data_dir, 4), ShardSet(s_b.data_dir, 4)

    fetch = _reading(log)

    try:
        owner = WriterDriver(Writer(shards_a, s_a, keys), DeferredWork(shards_a, s_a), _Published(), "log")
        await owner.handle(log)  # erased s1 and destroyed its key before committing offset 3
        await asyncio.sleep(0.002)
        session_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, "s1"))  # the session's next turns
        derived_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, DERIVED))  # the owner's next scenes
        guard = _FlakyGuardKeys(keys)
        guard.down = True
        work_b = DeferredWork(shards_b, s_b)
        standby = WriterDriver(Writer(shards_b, s_b, keys, guard_keys=guard), work_b, _Published(), "log", fetch)
        await standby.follow(log[0].partition, 3, _Embedded(), transaction=500)
        assert work_b.count() == 1  # the copy deferred the erasure
        guard.down = False
        await standby.retry_due({log[0].partition})  # given the partition: its deferred work is retried
        session_key, derived_retired = keys.get(session_kid), keys.retired(derived_kid)
    finally:
        shards_a.close()
        shards_b.close()
        keys.close()
    assert session_key is not None
    assert not derived_retired


@pytest.fixture
def embedding_standby(tmp_path: Path) -> Any:
    """A worker with standby copies, a toy embedder and an index of its own, owning partition 0 only."""
    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", worker_standby=True)
    shards = ShardSet(settings.data_dir, settings.partitions)
    embedding = _Toy()
    vectors = EdgeVectorIndex(tmp_path / "vectors", embedding.collection, embedding.dim)
    vectors.open()
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings),
                           default_processors(None, embedding, vectors), "log-id", vectors=vectors)
    rt.bus.publish_many = _Published()
    rt.toy, rt.index = embedding, vectors
    yield rt
    vectors.close()
    shards.close()


async def _following(rt: Any, log: list[Record], committed: int) -> Member:
    owned = TopicPartition(topic_name(Topic.PROPOSALS, rt.settings.topic_prefix), (log[0].partition + 1) % 4)
    member = Member({owned}, committed=committed)
    rt._member = member
    await rt.assigned(frozenset({owned}))

    fetch = _reading(log)

    rt.writer.fetch = fetch
    return member


def _ids(rt: Any) -> list[str]:
    return [r["memory_id"] for r in rows(rt.settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L0'")]


async def test_what_the_index_could_not_take_is_embedded_at_the_next_tick_and_never_published(
        embedding_standby: Any) -> None:
    """Found by a review: changes a standby copy could not hand to its embedder stayed in the outbox and were
    published at the next tick (the owner had published them already); this worker's index never had them."""
    rt = embedding_standby
    log = await _log(rt.settings, 4)
    member = await _following(rt, log, committed=2)
    rt.toy.down = True
    await rt._follow_unowned()  # applied, not embedded: noted
    rt.toy.down = False
    member._committed = 4
    await rt._follow_unowned()
    ids = _ids(rt)
    assert len(ids) == 4 and set(rt.index.points(ids)) == set(ids)
    assert rt.standby.unembedded == {} and rt.bus.publish_many.records == []
    assert shards_outbox(rt) == 0


async def test_a_standby_copy_applies_the_owners_erasure_while_its_embedder_is_away(embedding_standby: Any) -> None:
    """Found by a review: while the retry of what the index could not take kept failing, the copy applied
    nothing, the owner's erasures neither: the erased messages stayed readable in its shard."""
    rt = embedding_standby
    log = await _session_log(rt.settings)
    member = await _following(rt, log, committed=2)
    rt.toy.down = True  # the endpoint is away for a long while
    await rt._follow_unowned()
    member._committed = 3  # the owner erases session s1
    for _ in range(2):
        await rt._follow_unowned()
    assert _ids(rt) == []


async def test_what_a_standby_copy_could_not_embed_is_not_embedded_after_its_erasure(embedding_standby: Any) -> None:
    """Found by a review: the retry embedded the memories it had noted, erased since: their vectors came back."""
    rt = embedding_standby
    log = await _session_log(rt.settings)
    member = await _following(rt, log, committed=2)
    rt.toy.down = True
    await rt._follow_unowned()
    noted = set(rt.standby.unembedded.get(log[0].partition, {}))
    assert len(noted) == 2
    rt.toy.down = False
    member._committed = 3  # the owner erased session s1
    await rt._follow_unowned()
    assert rt.index.points(sorted(noted)) == {} and rt.standby.unembedded == {}


async def test_leftovers_are_not_published_after_the_changes_the_standby_copy_applied_since(tmp_path: Path) -> None:
    """Found by a review: this worker applied A while it owned the partition, and a rebalance kept A's change
    from being published; the new owner applied A and then a forget of A; this worker's standby copy applied
    the forget. Given the partition back, its flush published A's stale after-image after the forget: its
    embed lane put A's vector back."""
    s_w, s_v = (Settings(data_dir=tmp_path / d, partitions=4) for d in ("w", "v"))
    log, memory_a = await _upsert_then_forget(s_w)
    a = log[0]

    fetch = _reading(log)

    async def refused(records: Sequence[OutgoingRecord]) -> None:
        raise ConnectionError("the rebalance cancelled the flush")

    shards_w, shards_v = ShardSet(s_w.data_dir, 4), ShardSet(s_v.data_dir, 4)
    try:
        with pytest.raises(ConnectionError):
            await WriterDriver(Writer(shards_w, s_w), DeferredWork(shards_w, s_w), refused, "log").handle([a])
        await WriterDriver(Writer(shards_v, s_v), DeferredWork(shards_v, s_v), _Published(), "log").handle(log)
        published, embedded = _Published(), _Embedded()
        w = WriterDriver(Writer(shards_w, s_w), DeferredWork(shards_w, s_w), published, "log", fetch)
        assert await w.follow(a.partition, 2, embedded, transaction=500) == 1  # the forget, as the owner did
        await w.catch_up(a.partition, 2)  # the partition comes back: nothing left to restore
        await w.flush(a.partition)
    finally:
        shards_w.close()
        shards_v.close()
    stale = [decode_event(r.value) for r in published.records]
    assert not [e for e in stale if isinstance(e, ChangeEvent) and e.memory is not None]
    assert any(memory_a in e.removed_ids for e in embedded.changes)


@pytest.mark.parametrize("transaction", [1, 500])
async def test_a_proposal_a_standby_copy_deferred_comes_before_what_follows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transaction: int) -> None:
    """Found by a review: the copy deferred A (its guard could not decide), applied the forget of A after it
    (refused: A unknown), and retried A only at the takeover: the new owner held a memory the old one forgot.
    A copy now goes no further than a proposal it deferred, and retries it first; also within one of its
    transactions (500 proposals each: what came after A in it was applied without A)."""
    from altm.pipeline.writer.guard import WriteGuard

    s_a = Settings(data_dir=tmp_path / "a", partitions=4)
    s_b = Settings(data_dir=tmp_path / "b", partitions=4, defer_backoff_s=0.0)
    log, _ = await _upsert_then_forget(s_a)
    a = log[0]

    fetch = _reading(log)

    shards_a, shards_b = ShardSet(s_a.data_dir, 4), ShardSet(s_b.data_dir, 4)
    try:
        await WriterDriver(Writer(shards_a, s_a), DeferredWork(shards_a, s_a), _Published(), "log").handle(log)
        real = WriteGuard._tombstone

        monkeypatch.setattr(WriteGuard, "_tombstone", _undecided)
        work_b = DeferredWork(shards_b, s_b)
        copy = WriterDriver(Writer(shards_b, s_b), work_b, _Published(), "log", fetch)
        await copy.follow(a.partition, 2, _Embedded(), transaction=transaction)
        assert work_b.count() == 1
        held_back = copy.writer.resume_offset(copy.topic, a.partition)
        monkeypatch.setattr(WriteGuard, "_tombstone", real)
        await copy.follow(a.partition, 2, _Embedded(), transaction=transaction)  # the next tick: A, then the forget
        here = rows(s_b.data_dir, "SELECT memory_id FROM memories")
        there = rows(s_a.data_dir, "SELECT memory_id FROM memories")
        waiting = work_b.count()
    finally:
        shards_a.close()
        shards_b.close()
    assert held_back == 1  # the forget was not applied while A waited
    assert waiting == 0
    assert here == there == []


async def test_the_owners_first_application_of_an_erasure_retires_the_derived_keys_made_before_it(
        tmp_path: Path) -> None:
    """Found by a review: with the cut-off at the erasure's record time on every path, the owner's own retry of a
    deferred erasure left alone a derived key made meanwhile (a scene quoting the session, sealed while the
    erasure waited): never destroyed. The first application takes every key; only re-applications a cut-off."""
    keys = SqliteKeyStore(tmp_path / "keys.db")
    s = Settings(data_dir=tmp_path / "a", partitions=4, defer_backoff_s=0.0)
    log = await _session_log(s)
    shards = ShardSet(s.data_dir, 4)
    try:
        guard = _FlakyGuardKeys(keys)
        guard.down = True
        work = DeferredWork(shards, s)
        owner = WriterDriver(Writer(shards, s, keys, guard_keys=guard), work, _Published(), "log")
        await owner.handle(log)
        assert work.count() == 1
        await asyncio.sleep(0.005)
        scene_kid, _ = keys.current(Owner(SCOPE.home, SCOPE.agent_id, DERIVED))  # sealed while it waited
        guard.down = False
        await owner.retry_due()
        retired = keys.retired(scene_kid)
    finally:
        shards.close()
        keys.close()
    assert retired


async def test_a_copys_held_deferral_comes_before_what_follows_it_at_the_takeover(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a review: given the partition while A waited, the takeover's restore applied the forget of A
    first (A unknown) and the retry stored A afterwards."""
    from altm.pipeline.writer.guard import WriteGuard

    s_a = Settings(data_dir=tmp_path / "a", partitions=4)
    s_b = Settings(data_dir=tmp_path / "b", partitions=4, defer_backoff_s=60.0)  # not due at the takeover
    log, _ = await _upsert_then_forget(s_a)
    a = log[0]

    fetch = _reading(log)

    shards_a, shards_b = ShardSet(s_a.data_dir, 4), ShardSet(s_b.data_dir, 4)
    try:
        await WriterDriver(Writer(shards_a, s_a), DeferredWork(shards_a, s_a), _Published(), "log").handle(log)
        real = WriteGuard._tombstone

        monkeypatch.setattr(WriteGuard, "_tombstone", _undecided)
        work_b = DeferredWork(shards_b, s_b)
        copy = WriterDriver(Writer(shards_b, s_b), work_b, _Published(), "log", fetch)
        await copy.follow(a.partition, 2, _Embedded(), transaction=1)
        assert work_b.count() == 1 and copy.writer.resume_offset(copy.topic, a.partition) == 1
        monkeypatch.setattr(WriteGuard, "_tombstone", real)
        await copy.catch_up(a.partition, 2)  # given the partition
        here = rows(s_b.data_dir, "SELECT memory_id FROM memories")
        waiting = work_b.count()
    finally:
        shards_a.close()
        shards_b.close()
    assert here == [] and waiting == 0


async def test_a_proposal_that_never_decides_holds_a_copy_back_only_a_few_tries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a review: one proposal the guard can never decide held a copy back for good, the owner's
    erasures after it too (the owner defers it and goes on): the erased messages stayed in the copy's shard."""
    from altm.pipeline.writer.guard import GuardUnavailable, WriteGuard

    s_a = Settings(data_dir=tmp_path / "a", partitions=4)
    s_b = Settings(data_dir=tmp_path / "b", partitions=4, defer_backoff_s=0.0)
    two = await _session_log(s_a)
    (other,) = await CaptureProcessor().process(make_turn(3, "a message the guard cannot judge", session="s2"),
                                                ProcessorContext(settings=s_a))
    assert isinstance(other, UpsertMemoryProposal)
    log = [two[0], two[1], Record(two[0].topic, two[0].partition, 2, SCOPE.home, encode(other)),
           Record(two[2].topic, two[2].partition, 3, two[2].key, two[2].value, timestamp_ms=two[2].timestamp_ms)]

    fetch = _reading(log)

    shards_a, shards_b = ShardSet(s_a.data_dir, 4), ShardSet(s_b.data_dir, 4)
    try:
        real = WriteGuard.check

        def picky(self: WriteGuard, tx: Any, m: Any) -> Any:
            if m.memory_id == other.memory.memory_id:
                raise GuardUnavailable("write guard could not be evaluated on this content")
            return real(self, tx, m)

        monkeypatch.setattr(WriteGuard, "check", picky)
        await WriterDriver(Writer(shards_a, s_a), DeferredWork(shards_a, s_a), _Published(), "log").handle(log)
        copy = WriterDriver(Writer(shards_b, s_b), DeferredWork(shards_b, s_b), _Published(), "log", fetch)
        for _ in range(HOLD_ATTEMPTS + 2):
            await copy.follow(log[0].partition, 4, _Embedded(), transaction=1)
        copy_s1 = rows(s_b.data_dir, "SELECT memory_id FROM memories WHERE session_id='s1'")
    finally:
        shards_a.close()
        shards_b.close()
    assert copy_s1 == []


async def test_what_a_standby_copy_could_not_embed_before_a_restart_is_embedded_after_it(
        embedding_standby: Any) -> None:
    """Loss before: the memories a standby copy's index could not take were noted in memory only. The worker
    stopped before its embedder came back; the worker that started again on the same data dir never embedded
    them (they were applied: nothing in the log brings them back), so once it took the partition over they
    were found by words only. Now a worker's first tick checks each copy's shard against its index."""
    rt = embedding_standby
    log = await _log(rt.settings, 3)
    await _following(rt, log, committed=3)
    rt.toy.down = True
    await rt._follow_unowned()  # applied, not embedded
    ids = _ids(rt)
    assert len(ids) == 3 and rt.index.points(ids) == {}
    again: Any = KafkaRuntime(rt.settings, rt.shards, ProcessorContext(settings=rt.settings),
                              default_processors(None, rt.toy, rt.index), "log-id", vectors=rt.index)
    again.bus.publish_many = _Published()
    rt.toy.down = False
    await _following(again, log, committed=3)
    await again._follow_unowned()
    assert set(rt.index.points(ids)) == set(ids)
    assert again.standby.unembedded == {} and again.bus.publish_many.records == []


@pytest.mark.parametrize("shared", [False, True])
async def test_a_point_no_shard_holds_is_deleted_at_the_start_unless_the_index_is_shared(
        embedding_standby: Any, shared: bool) -> None:
    """An erasure a standby copy applied while its index was away left the erased memory's point behind, and a
    stop lost the note. The first tick deletes points whose memory no shard here holds; not from a server's
    collection, where they may be another worker's."""
    rt = embedding_standby
    log = await _log(rt.settings, 2)
    await _following(rt, log, committed=2)
    rt.index.shared = shared
    rt.index.upsert([VectorPoint("mem_erased_meanwhile", rt.toy.embed(["gone"])[0], {})])
    await rt._follow_unowned()
    ids = _ids(rt)
    assert set(rt.index.points(ids)) == set(ids)
    assert bool(rt.index.points(["mem_erased_meanwhile"])) is shared


async def test_memories_to_embed_again_go_a_thousand_per_tick(embedding_standby: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose index was lost whole notes every memory of its shards at its start: one tick embedding
    them all (one embedder call, one SQL statement with an id per memory) would keep its copies from applying
    for as long, and fail on a large shard. They go EMBED_AGAIN per tick and partition."""
    from altm.pipeline.runtime.kafka import _standby

    monkeypatch.setattr(_standby, "EMBED_AGAIN", 2)
    rt = embedding_standby
    log = await _log(rt.settings, 5)
    await _following(rt, log, committed=5)
    rt.toy.down = True
    await rt._follow_unowned()
    ids = _ids(rt)
    rt.toy.down = False
    seen = []
    for _ in range(3):
        await rt._follow_unowned()
        seen.append(len(rt.index.points(ids)))
    assert seen == [2, 4, 5] and rt.standby.unembedded == {}



async def test_a_standby_tick_asks_the_group_for_every_unowned_partition_at_once(standby: Any) -> None:
    """Each tick asked the group coordinator for one partition's committed offset at a time: with 64 partitions
    and 8 standby workers, 224 offset requests a second against the coordinator. One request per tick now."""
    proposals = topic_name(Topic.PROPOSALS, standby.settings.topic_prefix)
    owned = TopicPartition(proposals, 0)
    member = Member({owned}, committed=None)  # the owners have committed nothing yet
    standby._member = member
    await standby.assigned(frozenset({owned}))
    await standby._follow_unowned()
    await standby._follow_unowned()
    assert member.asked == [sorted(TopicPartition(proposals, p) for p in range(1, standby.partitions))] * 2
