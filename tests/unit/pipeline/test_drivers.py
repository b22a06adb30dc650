"""The runtime-neutral drivers: one writer path for both runtimes (issue 12, bug 4: the Kafka writer agent
dropped a proposal the guard deferred, because it re-implemented the writer stage and forgot the deferral)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from altm.bus import OutgoingRecord, Record
from altm.core import (
    ChangeEvent,
    ChangeStatus,
    Event,
    Kind,
    Layer,
    Method,
    Proposal,
    ProposalOp,
    Scope,
    Settings,
    TurnEvent,
    encode,
    partition_for,
)
from altm.pipeline import ProcessorContext, StageDriver, WriterDriver
from altm.pipeline._drivers import handle_until_done
from altm.pipeline.processors import BatchFailure, CaptureProcessor, EmbedProcessor
from altm.pipeline.processors._base import derived_memory
from altm.pipeline.runtime.kafka import KafkaRuntime
from altm.pipeline.writer import Writer
from altm.pipeline.writer.guard import WriteGuard
from altm.store import DeferredWork, MemoryReader, ShardSet
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def _proposal_record(settings: Settings, offset: int = 0) -> Record:
    (prop,) = await CaptureProcessor().process(make_turn(1, "hello there"), ProcessorContext(settings=settings))
    return Record("altm.proposals", partition_for(prop.key, settings.partitions), offset, prop.key, encode(prop))


def _broken_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: WriteGuard, shard: object, mem: object) -> None:
        raise RuntimeError("tombstone index unreadable")

    monkeypatch.setattr(WriteGuard, "_tombstone", broken)


async def test_the_writer_driver_keeps_what_the_guard_could_not_decide_and_retries_it(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"defer_backoff_s": 0.0})
    shards = ShardSet(s.data_dir, s.partitions)
    published: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        published.extend(records)

    try:
        work = DeferredWork(shards, s)
        driver = WriterDriver(Writer(shards, s), work, publish, "sqlite:test")
        record = await _proposal_record(s)
        _broken_once(monkeypatch)
        assert await driver.handle([record]) == 1
        assert work.count() == 1 and b'"deferred"' in published[-1].value  # kept, never accepted
        assert rows(s.data_dir, "SELECT 1 FROM memories") == []
        monkeypatch.undo()
        assert await driver.retry_due() == 1
        assert work.count() == 0 and len(rows(s.data_dir, "SELECT 1 FROM memories")) == 1
        assert b'"committed"' in published[-1].value
    finally:
        shards.close()


async def test_the_kafka_writer_lane_defers_through_the_same_driver(settings: Settings,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"broker": "kafka://127.0.0.1:1", "embedder": "none"})
    shards = ShardSet(s.data_dir, s.partitions)
    try:
        runtime = KafkaRuntime(s, shards, ProcessorContext(settings=s, reader=MemoryReader(shards)),
                               [CaptureProcessor()], "kafka:test")
        sent: list[OutgoingRecord] = []

        async def publish(records: Sequence[OutgoingRecord]) -> None:
            sent.extend(records)

        runtime.writer.publish = publish  # no broker here: collect what the lane publishes
        record = await _proposal_record(s)
        (lane,) = [lane for lane in runtime.lanes if lane.drivers == [runtime.writer]]
        _broken_once(monkeypatch)
        lane.start()
        lane.put(record.partition, [record])
        for _ in range(500):
            if lane.done:
                break
            await asyncio.sleep(0.01)
        await lane.stop(1.0)
        assert lane.done == {record.partition: 1}
        assert b'"deferred"' in sent[0].value
        assert runtime.work.count() == 1  # kept for retry (an early faust agent dropped it here)
    finally:
        shards.close()


async def test_outbox_rows_follow_the_topic_prefix_in_force_when_they_are_published(settings: Settings) -> None:
    """Issue 13: outbox rows stored absolute topic names, so a changed topic prefix sent a partition's changes
    to topics nobody reads. Rows name the kind now; legacy rows are mapped by their last part."""
    old = settings.model_copy(update={"topic_prefix": "old."})
    new = settings.model_copy(update={"topic_prefix": "new."})
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        record = await _proposal_record(old)
        Writer(shards, old).apply(record, settings.partitions)  # committed; the process dies before publishing
        shard = shards.get(record.partition)
        with shard.transaction() as tx:
            tx.enqueue("old.dlq", record.key, b"{}")  # a row written by an older ALTM: a full topic name
        sent: list[OutgoingRecord] = []

        async def publish(records: Sequence[OutgoingRecord]) -> None:
            sent.extend(records)

        driver = WriterDriver(Writer(shards, new), DeferredWork(shards, new), publish, "sqlite:test")
        await driver.flush(record.partition)
        assert [r.topic for r in sent] == ["new.changes", "new.dlq"]
        assert shard.pending_outbox() == []
    finally:
        shards.close()


# -- from the review of the batching change (each failed on 26789ee) -------------------------------------------


def _scope_on(partition: int, n: int) -> Scope:
    return next(sc for u in range(1000) if partition_for(
        (sc := Scope(tenant_id="t", workspace_id="w", user_id=f"u{u}", agent_id="a")).home, n) == partition)


def _writer_driver(shards: ShardSet, settings: Settings) -> tuple[WriterDriver, DeferredWork]:
    """A writer driver whose publishing goes nowhere (what it publishes is not under test here)."""
    work = DeferredWork(shards, settings)

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        return None

    return WriterDriver(Writer(shards, settings), work, publish, "sqlite:test"), work


async def _capture_record(settings: Settings, scope: Scope, offset: int, text: str, session: str = "s1") -> Record:
    (prop,) = await CaptureProcessor().process(make_turn(offset, text, scope=scope, session=session),
                                               ProcessorContext(settings=settings))
    return Record("altm.proposals", partition_for(prop.key, settings.partitions), offset, prop.key, encode(prop))


async def test_a_deferral_commits_with_its_batch_and_survives_a_failure_in_another_partition(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proposal the guard could not decide was kept for retry only after the whole batch was applied: a
    store failure in a later partition left the earlier partition's offset stored and its deferral unwritten."""
    import altm.pipeline.writer._apply as writer_module
    from altm.store import StoreUnavailable

    s = settings.model_copy(update={"defer_backoff_s": 0.0})
    shards = ShardSet(s.data_dir, s.partitions)
    try:
        driver, work = _writer_driver(shards, s)
        a = await _capture_record(s, _scope_on(0, s.partitions), 0, "hello there")
        b = await _capture_record(s, _scope_on(1, s.partitions), 0, "hello again")
        monkeypatch.setattr(WriteGuard, "_tombstone", lambda *args: (_ for _ in ()).throw(RuntimeError("no index")))
        real, calls = getattr(writer_module, "apply_op"), {"n": 0}  # noqa: B009 - the module's own name

        def flaky(tx: object, event: Any, ctx: object) -> Any:
            if event.key == b.key and calls["n"] == 0:
                calls["n"] += 1
                raise StoreUnavailable("database or disk is full")
            return real(tx, event, ctx)

        monkeypatch.setattr(writer_module, "apply_op", flaky)
        await handle_until_done(driver, [a, b], first_delay_s=0.01)
        assert work.count() == 2  # both kept for retry, A's included
        monkeypatch.undo()
        assert await driver.retry_due() == 2
        assert len(rows(s.data_dir, "SELECT 1 FROM memories")) == 2
    finally:
        shards.close()


async def test_an_erasure_drops_a_deferral_made_earlier_in_its_own_batch(settings: Settings,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The deferral was written after the batch, so the erasure in the same batch could not drop it and the
    retry brought the erased content back."""
    from altm.core import EraseProposal, Erasure
    from tests.support.turns import SCOPE

    s = settings.model_copy(update={"defer_backoff_s": 0.0})
    shards = ShardSet(s.data_dir, s.partitions)
    try:
        driver, work = _writer_driver(shards, s)
        kept = await _capture_record(s, SCOPE, 0, "my diagnosis is condition A")
        doubtful = await _capture_record(s, SCOPE, 1, "my medication is drug B")
        erase = EraseProposal(event_id="erase-s1", scope=SCOPE, timestamp=make_turn(9).timestamp,
                              processor="control", erasure=Erasure(target="session", session_id="s1"))
        erase_rec = Record("altm.proposals", kept.partition, 2, SCOPE.home, encode(erase))
        real = WriteGuard._tombstone

        def undecided(self: WriteGuard, tx: Any, mem: Any) -> Any:
            if "drug B" in mem.content:
                raise RuntimeError("tombstone index unreadable")
            return real(self, tx, mem)

        monkeypatch.setattr(WriteGuard, "_tombstone", undecided)
        await driver.handle([kept, doubtful, erase_rec])
        monkeypatch.undo()
        assert work.count() == 0
        await driver.retry_due()
        assert rows(s.data_dir, "SELECT content FROM memories") == []
    finally:
        shards.close()


def _sample(name: str, labels: dict[str, str]) -> float | None:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels)


async def test_the_outbox_gauge_shows_what_waits_while_the_bus_is_down_and_transactions_are_counted_once(
        settings: Settings) -> None:
    """Review of the metrics: the outbox depth is visible while publishing fails, a batch handled again after
    the failure counts its transaction once (the second time every record is below the stored offset), and the
    proposals are counted when applied, not after publication."""
    shards = ShardSet(settings.data_dir, settings.partitions)
    down = {"on": True}

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        if down["on"]:
            raise ConnectionError("broker unreachable")

    try:
        driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), publish, "sqlite:test")
        record = await _proposal_record(settings)
        partition = str(record.partition)
        committed = _sample("altm_writer_transactions_total", {"outcome": "committed"}) or 0.0
        applied = _sample("altm_writer_proposals_total", {"op": "upsert_memory", "status": "committed"}) or 0.0
        with pytest.raises(ConnectionError):
            await driver.handle([record])
        assert _sample("altm_outbox_records", {"partition": partition}) == 1.0  # committed, not yet published
        assert _sample("altm_writer_proposals_total", {"op": "upsert_memory", "status": "committed"}) == applied + 1
        down["on"] = False
        assert await driver.handle([record]) == 1  # the runtime hands the batch over again
        assert _sample("altm_outbox_records", {"partition": partition}) == 0.0
        assert _sample("altm_writer_transactions_total", {"outcome": "committed"}) == committed + 1
    finally:
        shards.close()


async def test_a_deferred_record_keeps_its_headers_for_the_retry(settings: Settings,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of freshness: deferred work dropped the record's headers, so a retried record (a model failure, a
    guard that could not decide) lost its source turn's publish time and left freshness without its slow tail."""
    from altm.bus import source_header

    s = settings.model_copy(update={"defer_backoff_s": 0.0})
    shards = ShardSet(s.data_dir, s.partitions)

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        return None

    try:
        driver = WriterDriver(Writer(shards, s), DeferredWork(shards, s), publish, "sqlite:test")
        plain = await _proposal_record(s)
        record = Record(plain.topic, plain.partition, plain.offset, plain.key, plain.value,
                        headers=(source_header(1_700_000_000_123),), timestamp_ms=1_700_000_000_456)
        _broken_once(monkeypatch)
        await driver.handle([record])
        monkeypatch.undo()
        assert await driver.retry_due() == 1
        (row,) = rows(s.data_dir, "SELECT source_ms FROM memories")
        assert row["source_ms"] == 1_700_000_000_123
    finally:
        shards.close()


class _Broker:
    """Publishing to a broker that may be away (``down``): what reached it is in ``sent``."""

    def __init__(self, *, down: bool) -> None:
        self.down = down
        self.sent: list[OutgoingRecord] = []

    async def __call__(self, records: Sequence[OutgoingRecord]) -> None:
        if self.down:
            raise ConnectionError("the broker is away")
        self.sent.extend(records)


async def test_an_erasure_drops_the_unpublished_changes_of_what_it_erases(settings: Settings) -> None:
    """Found by a review of standby copies: changes committed while the bus was away wait in the outbox; the
    erasure applied meanwhile destroys the session's data key, and the flush after it sealed those changes
    with a fresh key: the erased text went out readable (and stayed in the shard's outbox until then)."""
    from altm.core import EraseProposal, Erasure
    from tests.support.turns import SCOPE

    shards = ShardSet(settings.data_dir, settings.partitions)
    publish = _Broker(down=True)
    sent = publish.sent

    try:
        driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), publish, "log")
        kept = await _capture_record(settings, SCOPE, 0, "my vault code is 4471, keep it")
        other = await _capture_record(settings, SCOPE.model_copy(update={"agent_id": "other"}), 1,
                                      "the standup moved to ten")
        with pytest.raises(ConnectionError):
            await driver.handle([kept, other])
        erase = EraseProposal(event_id="erase-s1", scope=SCOPE, timestamp=make_turn(9).timestamp,
                              processor="control", erasure=Erasure(target="session", session_id="s1"))
        publish.down = False
        await driver.handle([Record("altm.proposals", kept.partition, 2, SCOPE.home, encode(erase))])
        assert shards.get(kept.partition).outbox_depth() == 0
    finally:
        shards.close()
    out = b"".join(r.value for r in sent)
    # the erased message's change is not published after its erasure. Its words, not its four digits: the
    # burial's keyed hashes and the clock put ~230 random hex digits and digits in ``out``, and "4471" turned up
    # among them about once in 300 runs
    assert b"vault code" not in out and b"4471, keep" not in out
    assert b"standup moved" in out  # another agent's is


@pytest.mark.parametrize("target", ["user", "agent"])
async def test_an_erasure_keeps_the_unpublished_change_of_a_forget_before_it(settings: Settings, target: str) -> None:
    """Found by a review: an agent's or user's erasure dropped every unpublished row sealed with its keys, the
    change of a forget before it too (it carries no memory): no change ever told the stages to remove what the
    forget removed (its vector stayed in the index), and the erasure's own change names only what it removed."""
    from altm.core import ChangeEvent, ChangeStatus, EraseProposal, Erasure, Forget, ForgetProposal, decode_event
    from tests.support.turns import SCOPE

    shards = ShardSet(settings.data_dir, settings.partitions)
    publish = _Broker(down=False)
    sent = publish.sent

    try:
        driver = WriterDriver(Writer(shards, settings), DeferredWork(shards, settings), publish, "log")
        a = await _capture_record(settings, SCOPE, 0, "my vault code is 4471, keep it")
        await driver.handle([a])
        mid = decode_event(a.value).memory.memory_id  # type: ignore[union-attr]
        forget = ForgetProposal(event_id="forget-a", scope=SCOPE, timestamp=make_turn(8).timestamp,
                                processor="lifecycle", forget=Forget(memory_ids=(mid,), reason="past retention"))
        erase = EraseProposal(event_id="erase", scope=SCOPE, timestamp=make_turn(9).timestamp, processor="control",
                              erasure=Erasure(target=target))
        publish.down = True
        with pytest.raises(ConnectionError):
            await driver.handle([Record("altm.proposals", a.partition, 1, SCOPE.home, encode(forget))])
        publish.down = False
        await driver.handle([Record("altm.proposals", a.partition, 2, SCOPE.home, encode(erase))])
    finally:
        shards.close()
    changes = [e for e in (decode_event(r.value) for r in sent if r.topic.endswith("changes"))
               if isinstance(e, ChangeEvent) and e.status is ChangeStatus.COMMITTED]
    assert any(mid in e.removed_ids for e in changes)  # the stages are told the forgotten memory is gone


# -- a batched processor's failure on one record (found while batching govern's scenes) -------------------------


class _BatchedCapture(CaptureProcessor):
    """Capture with a batched form processed event by event when it fails, as govern's and fold's: it fails
    the whole batch when one turn breaks it."""

    on_batch_failure = BatchFailure.DEAD_LETTER_EACH

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        if isinstance(event, TurnEvent) and event.content == "poison":
            raise RuntimeError("a processor bug this turn trips")
        return await super().process(event, ctx)

    async def process_batch(self, events: Sequence[Event], ctx: ProcessorContext) -> Sequence[Proposal] | None:
        return [p for event in events for p in await self.process(event, ctx)]


def _turn_records(settings: Settings, texts: Sequence[str]) -> list[Record]:
    turns = [make_turn(i, text) for i, text in enumerate(texts)]
    return [Record("altm.turns", partition_for(t.key, settings.partitions), i, t.key, encode(t))
            for i, t in enumerate(turns)]


def _stage(processor: CaptureProcessor, settings: Settings, shards: ShardSet) -> tuple[StageDriver,
                                                                                     list[OutgoingRecord]]:
    """A stage driver over ``processor`` and what it publishes."""
    sent: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        sent.extend(records)

    return StageDriver(processor, ProcessorContext(settings=settings), DeferredWork(shards, settings), publish), sent


async def test_one_record_that_breaks_a_batched_processor_is_dead_lettered_and_the_rest_go_on(
        settings: Settings) -> None:
    """A processor's batched form that raised (not a deferral) took the whole batch with it: the driver raised,
    and a runtime retried the same batch for ever. The batch is processed record by record then: the record
    that breaks it gets a dead letter with the stage and reason, the others their outputs."""
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        driver, sent = _stage(_BatchedCapture(), settings, shards)
        records = _turn_records(settings, ["first words", "poison", "last words"])
        assert await asyncio.wait_for(driver.handle(records), 5) == 3
        assert [r.topic for r in sent] == ["altm.proposals", "altm.dlq", "altm.proposals"]
        assert b"first words" in sent[0].value and b"last words" in sent[2].value
        assert b"a processor bug this turn trips" in sent[1].value and b'"stage":"capture"' in sent[1].value
    finally:
        shards.close()


class _IndexAway(_BatchedCapture):
    """A batched processor that needs a dependency (a vector index), as embed: it is away, every record fails."""

    on_batch_failure = BatchFailure.RETRY

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        raise ConnectionError("the vector index does not answer")


async def test_a_batched_processor_whose_dependency_is_away_dead_letters_nothing_and_is_tried_again(
        settings: Settings) -> None:
    """The other side of the fallback above: a batched form that needs a dependency (embed and its vector
    index) is not processed record by record when it fails: in an outage the records that do not reach the
    index would go through and those that do be dead-lettered (a vector never made, an erased point never
    deleted). The driver raises, and the runtime tries the batch again until the dependency is back."""
    shards = ShardSet(settings.data_dir, settings.partitions)
    try:
        driver, sent = _stage(_IndexAway(), settings, shards)
        with pytest.raises(ConnectionError):
            await driver.handle(_turn_records(settings, ["words 0", "words 1", "words 2"]))
        assert sent == []
    finally:
        shards.close()


class _Away:
    """A vector index that does not answer (a Qdrant server out of reach)."""

    def upsert(self, points: object) -> None:
        raise ConnectionError("the Qdrant server does not answer")

    delete = flush = upsert


class _Embedder:
    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.1, 0.2] for _ in texts]


def _change_records(settings: Settings, events: Sequence[ChangeEvent]) -> list[Record]:
    return [Record("altm.changes", partition_for(e.key, settings.partitions), i, e.key, encode(e))
            for i, e in enumerate(events)]


async def test_embed_with_its_index_away_dead_letters_none_of_a_batch_that_partly_reaches_it(
        settings: Settings) -> None:
    """From the review of the fallback (its first version dead-lettered these): a batch of two upserts and a
    rollback's own change (no memory, nothing removed: embed never reaches the index for it). Record by
    record, the rollback went through and both upserts were dead-lettered: two memories never embedded. Now
    nothing is dead-lettered: the first upsert fails alone too, so the batch is kept whole for a retry."""
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)

    def upsert(i: int) -> ChangeEvent:
        mem = derived_memory(scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.FACT, content=f"fact {i}",
                             evidence=["mem_e"], processor="t", method=Method.HEURISTIC, id_parts=[str(i)],
                             valid_from=at)
        return ChangeEvent(event_id=f"chg_u{i}", scope=SCOPE, timestamp=at, proposal_id=f"p{i}",
                           op=ProposalOp.UPSERT_MEMORY, status=ChangeStatus.COMMITTED, memory_id=mem.memory_id,
                           layer=Layer.L2, kind=Kind.FACT, memory=mem)

    rollback = ChangeEvent(event_id="chg_rb", scope=SCOPE, timestamp=at, proposal_id="pr", op=ProposalOp.ROLLBACK,
                           status=ChangeStatus.COMMITTED)
    shards = ShardSet(settings.data_dir, settings.partitions)
    sent: list[OutgoingRecord] = []

    async def publish(records: Sequence[OutgoingRecord]) -> None:
        sent.extend(records)

    try:
        embed = EmbedProcessor(_Embedder(), _Away())  # type: ignore[arg-type]
        work = DeferredWork(shards, settings)
        driver = StageDriver(embed, ProcessorContext(settings=settings), work, publish)
        assert await driver.handle(_change_records(settings, [upsert(1), rollback, upsert(2)])) == 3
        assert sent == [] and work.count() == 3  # all kept for a retry (the first failed alone too)
    finally:
        shards.close()
