"""Stages skip work that changes nothing (issue 13: every stage decoded every change, 128 records per turn in a
Kafka worker's profile, and a third of the proposals came back ``unchanged``): a change a stage has no use for
is skipped on its marker, unopened and undecoded; an upsert repeated in a batch, or one the writer applied
before, is not sent again (a scene recomputed unchanged, the node of each mention); every other decision is."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from altm.bus import CHANGE_HEADER, OutgoingRecord, Record, change_marker, source_header
from altm.bus.sealing import Sealer, SqliteKeyStore, is_sealed
from altm.bus.sealing._bus import SealedConsumer
from altm.core import (
    ChangeEvent,
    ChangeMarker,
    ChangeStatus,
    Event,
    GraphNode,
    Kind,
    Layer,
    Method,
    NodeType,
    Proposal,
    ProposalOp,
    Role,
    Settings,
    Topic,
    TurnEvent,
    UpsertNodeProposal,
    decode_event,
    encode,
)
from altm.pipeline import EmbeddedRuntime, ProcessorContext
from altm.pipeline._drivers import StageDriver, run_records
from altm.pipeline.processors import (
    CaptureProcessor,
    EmbedProcessor,
    Processor,
    default_processors,
    derived_memory,
    proposal,
)
from altm.store import DeferredWork, MemoryReader, ShardSet
from altm.vectors import VectorPoint
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

AT = datetime(2026, 3, 1, 12, tzinfo=UTC)
KINDS = {Layer.L0: Kind.MESSAGE, Layer.L1: Kind.CAPSULE, Layer.L2: Kind.FACT, Layer.L3: Kind.SCENE,
         Layer.L4: Kind.FACET}


def _change(status: ChangeStatus, op: ProposalOp, layer: Layer | None, removes: bool) -> ChangeEvent:
    memory = None
    if layer is not None:
        memory = derived_memory(scope=SCOPE, session_id="s1", layer=layer, kind=KINDS[layer],
                                content="We moved the billing service to Postgres on Friday.", evidence=["mem_e"],
                                processor="test", method=Method.HEURISTIC, id_parts=[layer.value], valid_from=AT)
    return ChangeEvent(event_id=f"chg_{status.value}_{op.value}_{layer}_{removes}", scope=SCOPE, timestamp=AT,
                       proposal_id="prop_1", op=op, status=status, memory_id="edge_1",
                       layer=layer, kind=KINDS[layer] if layer else None,
                       memory=memory if status is ChangeStatus.COMMITTED else None,
                       removed_ids=("mem_gone",) if removes else ())


def every_change() -> list[ChangeEvent]:
    return [_change(status, op, layer, removes) for status, op, layer, removes in itertools.product(
        ChangeStatus, ProposalOp, [None, *Layer], [False, True])]


class _Vectors:
    """Records what the embed stage asks of its index."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        self.calls.append("upsert")

    def delete(self, ids: Sequence[str]) -> None:
        self.calls.append("delete")

    def flush(self) -> None:
        self.calls.append("flush")


class _Untouchable:
    """A reader that fails the test when a stage reads the shards for a change it turned down."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"read the shards ({name}) for a change the stage turned down")


class _Embedding:
    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.1, 0.2] for _ in texts]


def test_a_marker_round_trips_and_anything_else_is_no_marker() -> None:
    for change in every_change():
        marker = ChangeMarker.of(change)
        assert ChangeMarker.parse(marker.encode()) == marker
    for raw in (b"", b"committed", b"committed|upsert_memory|L9|", b"nope|||", b"\xff\xfe|||", b"a|b|c|d|e"):
        assert ChangeMarker.parse(raw) is None


@pytest.mark.parametrize("processor", default_processors(), ids=lambda p: p.name)
async def test_a_change_a_stage_turns_down_is_one_it_would_not_act_on(processor: Processor,
                                                                       settings: Settings) -> None:
    """Soundness: for every status × op × layer × removes, a change ``accepts`` refuses gives no proposal and
    touches nothing (the context's reader fails the test when used)."""
    if isinstance(processor, EmbedProcessor):
        processor = EmbedProcessor(_Embedding(), _Vectors())  # type: ignore[arg-type]
    ctx = ProcessorContext(settings=settings, reader=_Untouchable())  # type: ignore[arg-type]
    refused = [c for c in every_change() if not processor.accepts(ChangeMarker.of(c))]
    for change in refused:
        assert list(await processor.process(change, ctx)) == [], change.event_id
        assert list(await processor.process_batch([change], ctx) or []) == [], change.event_id
    if isinstance(processor, EmbedProcessor):
        assert processor.vectors.calls == []  # type: ignore[union-attr]
    if processor.input_topic.value == "changes":  # every stage of the changes topic turns most of them down
        assert len(refused) > len(every_change()) / 2, processor.name


def _change_record(change: ChangeEvent, offset: int, *, marked: bool = True) -> Record:
    headers: tuple[tuple[str, bytes], ...] = (source_header(1),)
    if marked:
        headers += ((CHANGE_HEADER, ChangeMarker.of(change).encode()),)
    return Record("altm.changes", 0, offset, change.key, encode(change), headers=headers)


async def test_a_sealing_consumer_leaves_turned_down_changes_sealed_and_the_stage_skips_them(
        settings: Settings, tmp_path: Path) -> None:
    """The extract stage needs committed L0 upserts only: a verdict's change is delivered sealed and skipped
    without a dead letter; a change written before markers existed is opened and decoded as before."""
    sealer = Sealer(SqliteKeyStore(tmp_path / "keys.db"))
    wanted_change = _change(ChangeStatus.COMMITTED, ProposalOp.UPSERT_MEMORY, Layer.L0, False)
    other = _change(ChangeStatus.COMMITTED, ProposalOp.SET_TRUST, Layer.L2, False)
    records = [_change_record(wanted_change, 0), _change_record(other, 1), _change_record(other, 2, marked=False)]
    sealed = [Record(r.topic, r.partition, r.offset, r.key,
                     sealer.seal(OutgoingRecord(r.topic, r.value, key=r.key)).value, headers=r.headers)
              for r in records]
    assert all(is_sealed(r.value) for r in sealed)

    class _Inner:
        async def poll(self, max_records: int = 500, timeout_s: float = 0.0) -> list[Record]:
            return sealed

    extract = next(p for p in default_processors() if p.name == "extract")
    shards = ShardSet(settings.data_dir, settings.partitions)
    published: list[OutgoingRecord] = []

    async def publish(out: Sequence[OutgoingRecord]) -> None:
        published.extend(out)

    driver = StageDriver(extract, ProcessorContext(settings=settings), DeferredWork(shards, settings), publish)
    consumer = SealedConsumer(_Inner(), sealer, opens=driver.wants)  # type: ignore[arg-type]
    polled = await consumer.poll()
    assert [is_sealed(r.value) for r in polled] == [False, True, False]
    result = await run_records(extract, polled, ProcessorContext(settings=settings))
    assert result.dead_reasons == [] and not any(r.topic.endswith("dlq") for r in result.outgoing)
    assert [change_marker(r) for r in polled][2] is None


async def test_the_writer_marks_each_change_it_publishes(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "We decided to move the billing service to Postgres.")]) as (rt, _):
        changes = await rt.log.read_all(["altm.changes"])
    assert changes
    for rec in changes:
        marker = change_marker(rec)
        event = decode_event(rec.value)
        assert isinstance(event, ChangeEvent) and marker == ChangeMarker.of(event)


class _Twice(Processor):
    """Proposes the same node for every event (as link does for each mention of one entity)."""

    name = "twice"
    input_topic = Topic.TURNS

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        node = GraphNode(node_id="node_billing", scope=SCOPE, node_type=NodeType.ENTITY, name="billing",
                         method=Method.HEURISTIC)
        return [proposal(UpsertNodeProposal, scope=SCOPE, processor=self.name, cause=event, node=node)]


def _turn_record(turn: TurnEvent, offset: int) -> Record:
    return Record("altm.turns", 0, offset, turn.key, encode(turn))


async def test_a_decision_proposed_twice_in_a_batch_is_sent_once(settings: Settings) -> None:
    result = await run_records(_Twice(), [_turn_record(make_turn(i, f"billing {i}"), i) for i in range(3)],
                               ProcessorContext(settings=settings))
    assert len(result.outgoing) == 1 and result.repeats == 2


async def test_an_upsert_the_writer_applied_to_a_stored_memory_is_not_sent_again(settings: Settings) -> None:
    """A turn delivered again: its L0 upsert would be ``unchanged`` (applied once), so capture sends nothing;
    once the message is erased, the same upsert is sent again, and the writer's guard refuses it."""
    s = settings.model_copy(update={"embedder": "none"})
    turn = make_turn(1, "The staging password is hunter2-staging.")
    async with store_with(s, [turn]) as (rt, app):
        ctx = ProcessorContext(settings=s, reader=MemoryReader(rt.shards))
        again = await run_records(CaptureProcessor(), [_turn_record(turn, 7)], ctx)
        assert again.outgoing == [] and again.repeats == 1
        await app.erase(SCOPE, "session", session_id=turn.session_id)
        await rt.run_until_idle()
        after = await run_records(CaptureProcessor(), [_turn_record(turn, 8)], ctx)
        assert len(after.outgoing) == 1 and after.repeats == 0


def _scenes(rt: EmbeddedRuntime) -> list[str]:
    return [str(r[0]) for shard in rt.shards.existing()
            for r in shard._db.execute("SELECT content FROM memories WHERE layer='L3'")]


async def test_a_message_s_mention_rebuilds_a_scene_an_erasure_removed(settings: Settings) -> None:
    """Found by the review of this change: skipping scenes for edges from messages lost this. Erasing a session
    removes the scenes derived from its atoms and computes them again at once from the atoms left (the erasure
    names their anchors); the next mention of the entity keeps that scene (an assistant message has no atoms of
    its own)."""
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "We decided to move the Billing service to Postgres.", session="s1"),
             make_turn(2, "Billing is down again today.", session="s2"),
             make_turn(3, "We decided Billing gets a new owner.", session="s3")]
    async with store_with(s, turns) as (rt, app):
        assert _scenes(rt)
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
        assert [scene for scene in _scenes(rt) if "sessions s1, s2\n" in scene], _scenes(rt)
        assert not [scene for scene in _scenes(rt) if "s3" in scene], _scenes(rt)
        await rt.publish([make_turn(4, "I will check the Billing dashboard.", session="s4", role=Role.ASSISTANT)])
        await rt.run_until_idle()
        assert any("sessions s1, s2" in scene for scene in _scenes(rt)), _scenes(rt)


async def test_a_reviewer_s_approve_reject_approve_in_one_batch_ends_approved(settings: Settings) -> None:
    """Found by the review of this change: the batch dedupe dropped the third decision (it has the first one's
    id). Only upserts are deduplicated."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "We moved the billing service to Postgres.")]) as (rt, app):
        (mid,) = [str(r[0]) for shard in rt.shards.existing()
                  for r in shard._db.execute("SELECT memory_id FROM memories WHERE layer='L0'")]
        for decision in ("approve", "reject", "approve"):
            await app.admin.review_decide(SCOPE, mid, decision)
        await rt.run_until_idle()
        memory = MemoryReader(rt.shards).get(SCOPE, mid)
        assert memory is not None and memory.trust.status.value == "verified"


async def test_the_skipped_work_is_counted(settings: Settings) -> None:
    from prometheus_client import REGISTRY

    def skipped(stage: str, what: str) -> float:
        return REGISTRY.get_sample_value("altm_stage_skipped_total", {"stage": stage, "what": what}) or 0.0

    labels = [(stage, what) for stage in ("extract", "capture") for what in ("changes", "upserts")]
    before = {label: skipped(*label) for label in labels}
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, f"Billing and Postgres came up again in message {i}.") for i in range(1, 4)]
    async with store_with(s, [*turns, turns[0]]):  # the first turn delivered again
        pass
    assert skipped("extract", "changes") > before[("extract", "changes")]  # links, verdicts...: not its
    assert skipped("capture", "upserts") > before[("capture", "upserts")]  # the first message, stored once
