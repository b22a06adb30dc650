from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import orjson
import pytest

from altm.bus import Record
from altm.core import (
    ChangeStatus,
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Proposal,
    Provenance,
    Scope,
    SupersedeProposal,
    Supersession,
    UpsertMemoryProposal,
    UpsertNodeProposal,
    content_hash,
    decode_dead_letter,
    decode_event,
    encode,
    partition_for,
)
from altm.core.settings import Settings
from altm.pipeline.processors import CaptureProcessor, ProcessorContext, proposal, upsert_proposal
from altm.pipeline.writer import WRITER_GROUP, Writer
from altm.store import ShardError, ShardSet, ShardTx, StoreUnavailable
from tests.support.turns import SCOPE, make_turn
from tests.unit.core.test_proposals import SUPERSEDE_0_1

N = 4
TOPIC = "altm.proposals"


async def _proposal(i: int = 1, content: str | None = None, scope: Scope = SCOPE) -> UpsertMemoryProposal:
    (prop,) = await CaptureProcessor().process(
        make_turn(i, content, scope=scope), ProcessorContext(settings=Settings())
    )
    assert isinstance(prop, UpsertMemoryProposal)
    return prop


def _record(prop: Proposal | bytes, offset: int, *, key: str | None = None, partition: int | None = None
            ) -> Record:
    value = prop if isinstance(prop, bytes) else encode(prop)
    k = key if key is not None else (SCOPE.home if isinstance(prop, bytes) else prop.key)
    return Record(TOPIC, partition if partition is not None else partition_for(k, N), offset, k, value)


@pytest.fixture
def writer(settings: Settings) -> Iterator[Writer]:
    shards = ShardSet(settings.data_dir, N)
    yield Writer(shards, settings)
    shards.close()


def _audit_rows(writer: Writer, partition: int) -> list[dict[str, object]]:
    return [dict(r) for r in writer.shards.get(partition)._db.execute("SELECT * FROM audit_log ORDER BY audit_id")]


def _outbox(writer: Writer, partition: int) -> list[tuple[str, bytes]]:
    return [(t, v) for _, t, _, v, _ in writer.shards.get(partition).pending_outbox()]


async def test_commit_writes_memory_audit_offset_and_change(writer: Writer) -> None:
    prop = await _proposal()
    rec = _record(prop, 0)
    outcome = writer.apply(rec, N)
    (change,) = outcome.changes
    assert change.status is ChangeStatus.COMMITTED and change.memory is not None
    shard = writer.shards.get(rec.partition)
    row = shard.memory_row(prop.memory.memory_id)
    assert row is not None and row["content"] == prop.memory.content
    (audit,) = _audit_rows(writer, rec.partition)
    assert audit["action"] == "insert" and audit["old_value"] is None
    assert orjson.loads(str(audit["new_value"]))["memory_id"] == row["memory_id"]
    assert shard.next_offset(WRITER_GROUP, TOPIC, rec.partition) == 1
    ((topic, value),) = _outbox(writer, rec.partition)
    assert topic == "changes" and decode_event(value) == change  # the kind: the prefix is applied at publish


async def test_same_proposal_twice_changes_nothing(writer: Writer) -> None:
    prop = await _proposal()
    writer.apply(_record(prop, 0), N)
    shard = writer.shards.get(_record(prop, 0).partition)
    before = shard.memory_row(prop.memory.memory_id)
    # redelivery of the same record: skipped by the stored offset
    assert writer.apply(_record(prop, 0), N).skipped
    # the same proposal published again at a new offset: unchanged, no audit row, no mutation
    again = writer.apply(_record(prop, 1), N)
    assert [c.status for c in again.changes] == [ChangeStatus.UNCHANGED]
    assert shard.memory_row(prop.memory.memory_id) == before
    assert len(_audit_rows(writer, _record(prop, 0).partition)) == 1
    assert shard.next_offset(WRITER_GROUP, TOPIC, _record(prop, 0).partition) == 2


async def test_offset_is_stored_in_the_same_transaction_as_the_data(writer: Writer,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    prop = await _proposal()
    rec = _record(prop, 0)
    shard = writer.shards.get(rec.partition)

    def disk_full(self: ShardTx, *args: object, **kwargs: object) -> None:
        self._db.execute("INSERT INTO audit_log (at, actor, action, target_table, target_id) "
                         "VALUES ('now', 'x', 'insert', 'memories', 'm')")  # written, then the storage fails
        raise sqlite3.OperationalError("database or disk is full")

    # the storage fails after the audit row: nothing, not even the offset, may be committed, and the proposal
    # is not held against (it is applied again once the store works)
    monkeypatch.setattr(ShardTx, "insert_memory", disk_full)
    with pytest.raises(StoreUnavailable, match="disk is full"):
        writer.apply(rec, N)
    assert shard.next_offset(WRITER_GROUP, TOPIC, rec.partition) is None
    assert _audit_rows(writer, rec.partition) == []
    assert _outbox(writer, rec.partition) == []
    monkeypatch.undo()
    assert writer.apply(rec, N).changes[0].status is ChangeStatus.COMMITTED


async def test_a_proposal_the_store_refuses_is_rejected_not_retried_forever(writer: Writer) -> None:
    prop = await _proposal()
    rec = _record(prop, 0)
    shard = writer.shards.get(rec.partition)
    shard._db.execute("CREATE TRIGGER boom BEFORE INSERT ON memories BEGIN SELECT RAISE(ABORT, 'refused'); END")
    (change,) = writer.apply(rec, N).changes
    assert change.status is ChangeStatus.REJECTED and "refused" in (change.reason or "")
    assert shard.next_offset(WRITER_GROUP, TOPIC, rec.partition) == 1  # the partition moved on
    assert [r["action"] for r in _audit_rows(writer, rec.partition)] == []  # the op's writes were undone


async def test_scope_that_does_not_match_the_key_is_rejected(writer: Writer) -> None:
    prop = await _proposal()
    rec = _record(prop, 0, key="other/tenant/home", partition=partition_for(SCOPE.home, N))
    (change,) = writer.apply(rec, N).changes
    assert change.status is ChangeStatus.REJECTED
    assert change.reason is not None and "does not match the record key" in change.reason
    shard = writer.shards.get(rec.partition)
    assert shard.memory_row(prop.memory.memory_id) is None
    (reason,) = [r[0] for r in shard._db.execute("SELECT reason FROM rejections")]
    assert "does not match the record key" in reason


async def test_wrong_partition_is_rejected(writer: Writer) -> None:
    prop = await _proposal()
    right = partition_for(SCOPE.home, N)
    (change,) = writer.apply(_record(prop, 0, partition=(right + 1) % N), N).changes
    assert change.status is ChangeStatus.REJECTED and "belongs to partition" in (change.reason or "")


async def test_malformed_proposal_is_rejected_and_dead_lettered(writer: Writer) -> None:
    rec = _record(b'{"event_type": "proposal", "oops"', 0)
    outcome = writer.apply(rec, N)
    assert outcome.changes == []
    (dead,) = outcome.dead_letters
    assert dead.stage == "writer" and "malformed proposal: invalid JSON" in dead.error
    shard = writer.shards.get(rec.partition)
    assert shard._db.execute("SELECT COUNT(*) FROM rejections").fetchone()[0] == 1
    ((topic, value),) = _outbox(writer, rec.partition)
    assert topic == "dlq" and decode_dead_letter(value).original.startswith('{"event_type"')
    assert shard.next_offset(WRITER_GROUP, TOPIC, rec.partition) == 1  # the stream moves on


async def test_l0_is_append_only(writer: Writer) -> None:
    writer.apply(_record(await _proposal(1, "original words"), 0), N)
    (change,) = writer.apply(_record(await _proposal(1, "rewritten history"), 1), N).changes
    assert change.status is ChangeStatus.REJECTED and "append-only" in (change.reason or "")


async def test_oversized_content_is_rejected_by_the_writer(settings: Settings) -> None:
    shards = ShardSet(settings.data_dir, N)
    writer = Writer(shards, settings.model_copy(update={"max_content_bytes": 10}))
    (change,) = writer.apply(_record(await _proposal(1, "x" * 11), 0), N).changes
    assert change.status is ChangeStatus.REJECTED and "over the limit of 10" in (change.reason or "")
    shards.close()


def _derived(evidence: tuple[str, ...], content: str = "Dana prefers small PRs") -> UpsertMemoryProposal:
    mem = MemoryUnit(
        memory_id="mem_derived", scope=SCOPE, session_id="s1", layer=Layer.L2, kind=Kind.PREFERENCE,
        content=content, content_hash=content_hash(content), evidence=evidence,
        provenance=Provenance(method=Method.HEURISTIC, processor="extract"),
    )
    return upsert_proposal(mem, processor="extract", cause=make_turn(1))


def test_proposal_ids_are_derived_from_op_and_payload_as_before() -> None:
    made = proposal(SupersedeProposal, scope=Scope.parse("a/b/c/d"), processor="govern", cause=make_turn(1),
                    supersession=Supersession(old_id="mem_x", new_id="mem_y", reason="r"))
    assert made.event_id == "prop_cb69ef4eb1138cde06382ef49642f148"  # the id the bag-of-fields proposal had
    assert decode_event(SUPERSEDE_0_1) == made  # a 0.1 record of it reads back as the same proposal
    # an upsert's id covers the whole memory since 2026-12-01 (it was processor, memory id and content hash):
    # the writer applies a proposal once, so upserts that differ in evidence or attributes need their own ids
    assert _derived(()).event_id == "prop_6da3a0937dd50aa945028ca55408ffdb"
    assert _derived(("mem_a",)).event_id != _derived(("mem_a", "mem_b")).event_id


async def test_derived_memory_needs_stored_evidence(writer: Writer) -> None:
    (c1,) = writer.apply(_record(_derived(()), 0), N).changes
    assert c1.status is ChangeStatus.REJECTED and "needs evidence" in (c1.reason or "")
    (c2,) = writer.apply(_record(_derived(("mem_missing",)), 1), N).changes
    assert c2.status is ChangeStatus.REJECTED and "not in this shard" in (c2.reason or "")


async def test_a_proposal_delivered_again_is_not_applied_again(writer: Writer) -> None:
    """A stage that re-derives (after a crash, or after a worker restored a partition from the log and
    re-published its changes) sends the same proposal again. Applied again, it undid what later proposals did:
    an atom's evidence, merged since, was reset to its first occurrence's (issue 13, seen restoring a shard)."""
    first, second = await _proposal(1), await _proposal(2)
    writer.apply(_record(first, 0), N)
    writer.apply(_record(second, 1), N)
    once = _derived((first.memory.memory_id,))
    merged = _derived((first.memory.memory_id, second.memory.memory_id))  # a later decision about the atom
    writer.apply(_record(once, 2), N)
    writer.apply(_record(merged, 3), N)
    (change,) = writer.apply(_record(once, 4), N).changes
    assert change.status is ChangeStatus.UNCHANGED and "applied before" in (change.reason or "")
    row = writer.shards.get(_record(once, 4).partition).memory_row("mem_derived")
    assert row is not None
    assert orjson.loads(row["evidence"]) == sorted([first.memory.memory_id, second.memory.memory_id])


async def test_update_of_derived_memory_audits_old_value(writer: Writer) -> None:
    l0 = await _proposal()
    writer.apply(_record(l0, 0), N)
    ev = (l0.memory.memory_id,)
    writer.apply(_record(_derived(ev), 1), N)
    (change,) = writer.apply(_record(_derived(ev, "Dana prefers PRs under 300 lines"), 2), N).changes
    assert change.status is ChangeStatus.COMMITTED
    audits = _audit_rows(writer, _record(l0, 0).partition)
    assert [a["action"] for a in audits] == ["insert", "insert", "update"]
    assert orjson.loads(str(audits[-1]["old_value"]))["content"] == "Dana prefers small PRs"
    assert orjson.loads(str(audits[-1]["new_value"]))["content"] == "Dana prefers PRs under 300 lines"


async def test_content_hash_must_match(writer: Writer) -> None:
    prop = await _proposal()
    forged = prop.model_copy(update={"memory": prop.memory.model_copy(update={"content": "tampered"})})
    (change,) = writer.apply(_record(forged, 0), N).changes
    assert change.status is ChangeStatus.REJECTED and "content_hash" in (change.reason or "")


_MUTATIONS = ("insert_memory", "update_memory", "delete_memory", "put_node", "put_edge", "put_held_action",
              "put_cycle", "tombstone", "redact_audit", "scrub", "restore", "insert_signal", "record_decision",
              "mark_rejection", "delete_edges_touching", "add_rejection", "store_offset", "enqueue")


async def test_mutations_outside_a_transaction_are_refused(writer: Writer) -> None:
    shard = writer.shards.get(0)
    assert [m for m in _MUTATIONS if not hasattr(ShardTx, m)] == []
    assert [m for m in _MUTATIONS if hasattr(shard, m)] == []  # the shard itself cannot mutate
    with shard.transaction() as tx:
        pass
    with pytest.raises(ShardError, match="writer transaction"):
        tx.store_offset("g", "t", 0, 1)  # nor can a transaction that has ended


def _node_proposal(name: str, i: int) -> UpsertNodeProposal:
    from datetime import UTC, datetime

    from altm.core import GraphNode, NodeType

    node = GraphNode(node_id="node_last_week", scope=SCOPE, node_type=NodeType.TIME, name=name,
                     method=Method.HEURISTIC)
    return UpsertNodeProposal(event_id=f"prop-node-{i}", scope=SCOPE, timestamp=datetime(2026, 1, 1, tzinfo=UTC),
                              processor="link", node=node)


@pytest.mark.parametrize("order", [("Last week", "last week", "LAST week"), ("last week", "LAST week", "Last week"),
                                   ("LAST week", "Last week", "last week")])
def test_a_nodes_spelling_does_not_depend_on_arrival_order(settings: Settings, order: tuple[str, ...]) -> None:
    """Issue 13: the writer stored whichever spelling arrived last, so the embedded runtime, one worker and two
    workers ended with three state hashes on the same input."""
    shards = ShardSet(settings.data_dir, N)
    try:
        writer = Writer(shards, settings)
        for i, name in enumerate(order):
            writer.apply(_record(_node_proposal(name, i), i), N)
        (name,) = shards.get(partition_for(SCOPE.home, N))._db.execute(
            "SELECT name FROM graph_nodes WHERE node_id='node_last_week'").fetchone()
        assert name == "LAST week"  # the least spelling, whatever came last
    finally:
        shards.close()


async def test_a_batch_is_one_transaction_and_a_refused_proposal_does_not_poison_it(writer: Writer) -> None:
    good = [await _proposal(i, f"message number {i}") for i in range(1, 6)]
    refused = (await _proposal(9, "evidence-less")).model_copy(update={"scope": SCOPE})
    bad = refused.model_copy(update={"memory": refused.memory.model_copy(update={"content_hash": "0" * 64})})
    records = [_record(p, i) for i, p in enumerate([*good[:2], bad, *good[2:]])]
    shard = writer.shards.get(records[0].partition)
    begins: list[str] = []
    shard._db.set_trace_callback(lambda sql: begins.append(sql) if sql.startswith("BEGIN") else None)
    outcomes = writer.apply_batch(records, N)
    shard._db.set_trace_callback(None)
    assert len(begins) == 1  # one transaction for the whole batch of this partition
    statuses = [o.changes[0].status for o in outcomes]
    assert statuses.count(ChangeStatus.COMMITTED) == 5 and statuses[2] is ChangeStatus.REJECTED
    assert writer.resume_offset(TOPIC, records[0].partition) == len(records)
    again = writer.apply_batch(records, N)  # redelivered: every record below the stored offset is skipped
    assert all(o.skipped for o in again)


async def test_a_transaction_sqlite_rolled_back_itself_is_retried_whole_not_half_committed(writer: Writer) -> None:
    """An interrupt (or a full disk) makes SQLite roll the whole transaction back inside an op: the savepoint's
    ROLLBACK TO then failed, the proposal was recorded as rejected and the later records committed alone."""
    from altm.store import StoreUnavailable

    records = [_record(await _proposal(i, f"message number {i}"), i) for i in range(3)]
    shard = writer.shards.get(records[0].partition)
    armed = {"on": False, "fired": False, "inserts": 0}

    def trace(sql: str) -> None:  # the third memory's insert: interrupt it, SQLite rolls everything back
        if sql.startswith("INSERT INTO memories"):
            armed["inserts"] += 1
            armed["on"] = armed["inserts"] == 3

    def interrupt() -> int:
        if armed["on"] and not armed["fired"]:
            armed["fired"] = True
            return 1
        return 0

    shard._db.set_trace_callback(trace)
    shard._db.set_progress_handler(interrupt, 1)
    try:
        with pytest.raises(StoreUnavailable):
            writer.apply_batch(records, N)
    finally:
        shard._db.set_progress_handler(None, 1)
        shard._db.set_trace_callback(None)
    assert armed["fired"]
    assert writer.resume_offset(TOPIC, records[0].partition) is None  # nothing of the batch committed
    assert shard._db.execute("SELECT COUNT(*) FROM rejections").fetchone()[0] == 0
    outcomes = writer.apply_batch(records, N)  # delivered again: all of it now
    assert [o.changes[0].status for o in outcomes] == [ChangeStatus.COMMITTED] * 3


def test_a_nodes_method_and_attributes_do_not_depend_on_arrival_order(settings: Settings) -> None:
    from datetime import UTC, datetime

    from altm.core import GraphNode, NodeType

    def node(method: Method, attrs: dict[str, object], i: int) -> UpsertNodeProposal:
        n = GraphNode(node_id="node_acme", scope=SCOPE, node_type=NodeType.ENTITY, name="ACME", method=method,
                      attributes=attrs)
        return UpsertNodeProposal(event_id=f"prop-acme-{i}", scope=SCOPE, processor="link", node=n,
                                  timestamp=datetime(2026, 1, 1, tzinfo=UTC))

    first, second = node(Method.LLM, {"kind": "company", "seen": 2}, 0), node(Method.HEURISTIC, {"seen": 1}, 1)
    stored: list[tuple[str, str, str]] = []
    for order in ((first, second), (second, first)):
        shards = ShardSet(settings.data_dir / f"d{len(stored)}", N)
        try:
            writer = Writer(shards, settings)
            for i, p in enumerate(order):
                writer.apply(_record(p, i), N)
            stored.append(shards.get(partition_for(SCOPE.home, N))._db.execute(
                "SELECT name, method, attributes FROM graph_nodes WHERE node_id='node_acme'").fetchone())
        finally:
            shards.close()
    assert stored[0] == stored[1]
    assert stored[0][1] == "heuristic" and orjson.loads(stored[0][2]) == {"kind": "company", "seen": 1}


async def test_two_writers_of_one_shard_neither_repeat_nor_rewind(settings: Settings,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13 (from the review): the stored offset was read before the transaction and overwritten after it,
    so during a rebalance a second writer of a shared shard could apply a record again and move the offset
    back. It is read under the write lock now, and never moves back."""
    first, second = ShardSet(settings.data_dir, N), ShardSet(settings.data_dir, N)
    try:
        a, b = Writer(first, settings), Writer(second, settings)
        records = [_record(await _proposal(i, f"message number {i}"), i) for i in range(5)]
        partition = records[0].partition
        a.apply_batch(records, N)
        shard = second.get(partition)
        real, looks = shard.next_offset, {"n": 0}

        def stale_first_look(group: str, topic: str, part: int) -> int | None:
            looks["n"] += 1
            return None if looks["n"] == 1 else real(group, topic, part)  # b looked before a committed

        monkeypatch.setattr(shard, "next_offset", stale_first_look)
        again = b.apply_batch(records[2:4], N)  # b, behind, gets two of them again
        monkeypatch.undo()
        assert all(o.skipped for o in again)
        assert b.resume_offset(TOPIC, partition) == 5
        with shard.transaction() as tx:
            tx.store_offset(WRITER_GROUP, TOPIC, partition, 3)  # a stale writer's late store
        assert shard.next_offset(WRITER_GROUP, TOPIC, partition) == 5
    finally:
        first.close()
        second.close()
