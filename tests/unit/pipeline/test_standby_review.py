"""Defects a review of the standby copies' restart handling found (issue 13), each a test that failed before
its fix: the hand-over republished a copy's own held proposal (at a start and from the retry timer); an index
away at the start stopped every copy, erasures included; embedding again after an await put an erased
memory's vector back; a partition given back while its hand-over failed was handed over later; a process's
private ``memory://`` index was taken for a shared server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from altm.bus import Record, TopicPartition
from altm.core import ChangeEvent, Settings, Topic, decode_event, topic_name
from altm.pipeline import WriterDriver
from altm.pipeline.processors import ProcessorContext, default_processors
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.pipeline.writer import Writer
from altm.store import DeferredWork, ShardSet
from tests.support.lanes import Member
from tests.support.lanes import until as _until
from tests.support.rows import rows
from tests.unit.pipeline import test_kafka_worker_edges, test_standby
from tests.unit.pipeline.test_kafka_worker_edges import _Capture
from tests.unit.pipeline.test_standby import (
    _following,
    _ids,
    _Published,
    _reading,
    _session_log,
    _undecided,
    _upsert_then_forget,
)

embedding_standby = test_standby.embedding_standby  # the fixtures
runtime = test_kafka_worker_edges.runtime


# 1 -------------------------------------------------------------------------------------------------------------

async def test_the_start_hand_over_leaves_a_standby_copys_held_proposal_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The previous run's standby copy of partition p deferred A (guard undecided) and held back. At the next
    start every partition not kept is 'given up': the hand-over republishes A to the proposals log and deletes the
    hold; the copy then applies the forget of A first (A unknown) and the republished A after it."""
    from altm.pipeline.writer.guard import WriteGuard

    s_a = Settings(data_dir=tmp_path / "a", partitions=4)  # the owner of p
    log, _ = await _upsert_then_forget(s_a)
    p = log[0].partition
    shards_a = ShardSet(s_a.data_dir, 4)
    await WriterDriver(Writer(shards_a, s_a), DeferredWork(shards_a, s_a), _Published(), "log").handle(log)
    there = rows(s_a.data_dir, "SELECT memory_id FROM memories")
    shards_a.close()

    s = Settings(data_dir=tmp_path / "b", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                 worker_standby=True, defer_backoff_s=60.0)
    shards = ShardSet(s.data_dir, 4)
    proposals = topic_name(Topic.PROPOSALS, s.topic_prefix)
    owned = TopicPartition(proposals, (p + 1) % 4)
    try:
        real = WriteGuard._tombstone
        monkeypatch.setattr(WriteGuard, "_tombstone", _undecided)
        first: Any = KafkaRuntime(s, shards, ProcessorContext(settings=s), default_processors(), "log-id")
        first._member, first.bus = Member({owned}, committed=2), _Capture()
        first.writer.fetch = _reading(log)
        await first.assigned(frozenset({owned}))
        await _until(lambda: not first._handovers)
        await first.standby.follow(p, 2)  # A deferred: the copy holds back at offset 1
        assert [i.offset for i in first.work.pending({p})] == [0]
        monkeypatch.setattr(WriteGuard, "_tombstone", real)

        again: Any = KafkaRuntime(s, shards, ProcessorContext(settings=s), default_processors(), "log-id")  # restart
        again._member, again.bus = Member({owned}, committed=2), _Capture()
        again.writer.fetch = _reading(log)
        await again.assigned(frozenset({owned}))
        await _until(lambda: not again._handovers)
        republished = [Record(r.topic, p, len(log) + i, r.key, r.value, r.headers)
                       for i, r in enumerate(again.bus.sent) if r.topic == proposals]
        full = [*log, *republished]  # what the proposals log holds now
        again.writer.fetch = _reading(full)
        again._member._committed = len(full)  # the owner applied it (unchanged) and committed
        await again.standby.follow(p, len(full))
        here = rows(s.data_dir, "SELECT memory_id FROM memories")
    finally:
        shards.close()
    assert here == there == [], "the copy holds A, which its owner forgot"
    assert republished == [], "the copy's own held proposal was republished to the proposals log"


# 2 -------------------------------------------------------------------------------------------------------------

async def test_an_index_away_at_the_start_does_not_stop_the_copies_applying_erasures(embedding_standby: Any) -> None:
    """``_check_index`` runs inside ``_follow_unowned`` before any copy is followed; ``vectors.ids()`` raising (a
    Qdrant server away, the shared case) fails every tick: no copy applies anything, the owner's erasures
    neither, for as long as the index is away."""
    rt = embedding_standby
    log = await _session_log(rt.settings)
    member = await _following(rt, log, committed=2)
    await rt._follow_unowned()
    assert len(_ids(rt)) == 2

    def away() -> list[str]:
        raise ConnectionError("the vector server is away")

    fresh: Any = KafkaRuntime(rt.settings, rt.shards, ProcessorContext(settings=rt.settings),  # a restart
                              default_processors(None, rt.toy, rt.index), "log-id", vectors=rt.index)
    fresh.bus.publish_many = _Published()
    await _following(fresh, log, committed=2)
    fresh._member._committed = 3  # the owner erases session s1
    fresh.vectors.ids = away
    for _ in range(2):
        with contextlib.suppress(ConnectionError):  # the timer logs it and tries again
            await fresh._follow_unowned()
    assert member is not None
    assert _ids(fresh) == [], "the erased messages stay in the copy while the index is away"


# 3 -------------------------------------------------------------------------------------------------------------

async def test_embedding_again_an_owned_partitions_memory_does_not_undo_its_erasure(embedding_standby: Any) -> None:
    """``_check_index`` now notes the missing memories of owned partitions too (at a start, those the embed lane
    has not reached yet), and ``_embed_again`` reads them from the shard and upserts them after an await. The
    embed lane meanwhile handles their erasure (deletes the points, none there yet); the upsert then puts the
    erased memory's vector back, and nothing deletes it before the next start."""
    rt = embedding_standby
    log = await _session_log(rt.settings)
    p = log[0].partition
    proposals = topic_name(Topic.PROPOSALS, rt.settings.topic_prefix)
    rt._member, rt.bus = Member({TopicPartition(proposals, p)}, committed=None), _Capture()
    await rt.assigned(frozenset(rt._member.assigned))
    await asyncio.sleep(0)
    await rt.writer.handle(log[:2])  # owned: applied by the writer lane; the embed lane is behind
    ids = _ids(rt)
    assert len(ids) == 2 and rt.index.points(ids) == {}

    gate, entered = asyncio.Event(), asyncio.Event()
    real = rt.toy.aembed

    async def slow(texts: Sequence[str]) -> Any:
        entered.set()
        await gate.wait()
        return await real(texts)

    rt.toy.aembed = slow
    tick = asyncio.create_task(rt._follow_unowned())  # the first tick: _check_index, then _embed_again(p)
    await asyncio.wait_for(entered.wait(), 2)
    sent = len(rt.bus.sent)
    await rt.writer.handle(log[2:])  # meanwhile: the erasure of s1 (the writer lane) ...
    erased = [e for r in rt.bus.sent[sent:] if isinstance(e := decode_event(r.value), ChangeEvent)
              and e.removed_ids]
    assert erased and set(erased[0].removed_ids) == set(ids)
    rt.toy.aembed = real
    await rt._embed_stage.processor.process_batch(erased, rt._embed_stage.ctx)  # ... and the embed lane
    gate.set()
    await tick
    assert _ids(rt) == []
    assert rt.index.points(ids) == {}, "the erased memories' vectors are back in the index"




async def test_the_hand_over_retry_leaves_a_standby_copys_held_proposal_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through ``_retry_deferred``: p moved, its hand-over failed (``_hand_over_due``); the standby copy
    of p now defers A and holds back; the retry hands over every pending item of p, A with them."""
    from altm.pipeline.writer.guard import WriteGuard

    s_a = Settings(data_dir=tmp_path / "a", partitions=4)
    log, _ = await _upsert_then_forget(s_a)
    p = log[0].partition
    s = Settings(data_dir=tmp_path / "b", partitions=4, broker="kafka://127.0.0.1:1", embedder="none",
                 worker_standby=True, defer_backoff_s=60.0)
    shards = ShardSet(s.data_dir, 4)
    changes, proposals = (topic_name(t, s.topic_prefix) for t in (Topic.CHANGES, Topic.PROPOSALS))
    try:
        rt: Any = KafkaRuntime(s, shards, ProcessorContext(settings=s), default_processors(), "log-id")
        mine = {TopicPartition(t, p) for t in (changes, proposals)}
        rt._member, rt.bus = Member(mine, committed=None), _Capture(fail=True)
        await rt.assigned(frozenset(mine))
        await _until(lambda: not rt._handovers)
        rt.work.add("extract", changes, p, 7, "t/w/u", b"a change", "model unavailable")
        rt._member.assigned = set()
        await rt.revoked(frozenset(mine))
        await rt.assigned(frozenset())  # p moved; its hand-over fails
        await _until(lambda: not rt._handovers)
        assert rt._hand_over_due == {p}
        monkeypatch.setattr(WriteGuard, "_tombstone", _undecided)
        rt._member._committed = 2
        rt.writer.fetch = _reading(log)
        await rt.standby.follow(p, 2)  # the copy of p defers A and holds back
        rt.bus = _Capture()  # the broker is back
        await rt._retry_deferred()
        sent = [r.topic for r in rt.bus.sent]
    finally:
        shards.close()
    assert sent == [changes], "the copy's held proposal A was handed over too"


# 4 -------------------------------------------------------------------------------------------------------------

class _Gated(_Capture):
    """Publishing that waits for ``gate``, then fails (a broker timing out)."""

    def __init__(self) -> None:
        super().__init__(fail=True)
        self.gate = asyncio.Event()

    async def publish_many(self, records: Sequence[Any]) -> list[Any]:
        await self.gate.wait()
        return await super().publish_many(records)


async def test_a_partition_given_back_while_its_hand_over_fails_is_not_handed_over_later(runtime: Any) -> None:
    """p moves away; its hand-over is in flight (the broker slow to refuse) when p comes back to this worker;
    the hand-over then fails and ``_hand_over_lost`` adds p to ``_hand_over_due`` after ``assigned`` cleared it.
    At a later rebalance that keeps p (eager: every partition revoked, then assigned again), the deferred-work
    timer runs between the two and republishes p's deferred work, which this worker still owns."""
    rt = runtime
    changes, proposals = (topic_name(t, rt.settings.topic_prefix) for t in (Topic.CHANGES, Topic.PROPOSALS))
    mine = frozenset({TopicPartition(t, 1) for t in (changes, proposals)})
    rt._member, rt.bus = Member(set(mine), committed=None), _Gated()
    await rt.assigned(mine)
    rt.work.add("extract", changes, 1, 7, "t/w/u", b"a change", "model unavailable")
    await rt.revoked(mine)
    await rt.assigned(frozenset())  # p moved: its hand-over starts, and waits for the broker
    await asyncio.sleep(0.01)
    await rt.revoked(frozenset())
    await rt.assigned(mine)  # p comes back
    rt.bus.gate.set()  # the hand-over fails now
    await _until(lambda: not rt._handovers)
    rt.work.add("extract", changes, 1, 9, "t/w/u", b"another", "model unavailable")  # owned: deferred here
    await rt.revoked(mine)  # a rebalance that keeps p
    rt.bus = _Capture()
    await rt._retry_deferred()  # the timer, while the group joins
    await rt.assigned(mine)
    assert rt.bus.sent == [], "deferred work of a partition this worker keeps was handed over"
    assert [i.offset for i in rt.work.pending({1})] == [7, 9]




# 5 -------------------------------------------------------------------------------------------------------------

async def test_a_private_in_memory_index_is_not_taken_for_a_shared_one(tmp_path: Path) -> None:
    """``memory://`` (also the default of ALTM_VECTOR_BACKEND=qdrant without a URL) is a QdrantServerIndex over a
    process-private ``QdrantClient(':memory:')``: ``shared`` is True, so neither ``_check_index`` nor ``_drop``
    ever deletes an orphan point from it."""
    from altm.vectors import VectorPoint
    from altm.wiring._adapters import open_vectors
    from tests.unit.pipeline.test_standby import _Toy

    settings = Settings(data_dir=tmp_path / "data", partitions=4, broker="kafka://127.0.0.1:1", worker_standby=True,
                        vectors="memory://")
    shards, toy = ShardSet(settings.data_dir, 4), _Toy()
    vectors = open_vectors(settings, toy)
    assert vectors is not None
    rt: Any = KafkaRuntime(settings, shards, ProcessorContext(settings=settings),
                           default_processors(None, toy, vectors), "log-id", vectors=vectors)
    rt.bus.publish_many = _Published()
    try:
        log = await _session_log(settings)
        await _following(rt, log, committed=2)
        orphan = "mem_erased_meanwhile"
        vectors.upsert([VectorPoint(orphan, toy.embed(["gone"])[0], {"memory_id": orphan})])
        await rt._follow_unowned()
        left = vectors.points(["mem_erased_meanwhile"])
    finally:
        shards.close()
    assert left == {}, "an orphan point of this worker's private index was kept (taken for a shared index)"
