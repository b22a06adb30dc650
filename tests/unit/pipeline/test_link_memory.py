"""One graph proposal per memory (issue 13): ``link`` proposes a memory's nodes and edges as one ``link_memory``
proposal, which the writer applies in one step with one change, instead of one proposal (and one change, one
outbox row, one record fetched by every deriving lane) per node and per edge. The graph it builds, and the scenes
govern derives from it, are the same as with the proposals of one row each, which the writer still applies
(records an older ``link`` left on the log)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
import pytest

from altm.app.ingest import read_line
from altm.bus import Record, change_marker
from altm.core import (
    ChangeStatus,
    EdgeType,
    EraseProposal,
    Erasure,
    Event,
    GraphEdge,
    GraphNode,
    LinkMemoryProposal,
    MemoryLinks,
    Method,
    NodeType,
    Proposal,
    ProposalOp,
    Scope,
    TurnEvent,
    UpsertEdgeProposal,
    UpsertMemoryProposal,
    UpsertNodeProposal,
    encode,
    partition_for,
    topic_name,
)
from altm.core.settings import Settings
from altm.core.topics import Topic
from altm.interfaces.cli import sample_path
from altm.pipeline.processors import (
    CaptureProcessor,
    LinkProcessor,
    Processor,
    ProcessorContext,
    default_processors,
    proposal,
)
from altm.pipeline.writer import Writer
from altm.store import ShardSet
from altm.wiring import state_hash
from tests.support.memories import embedded, runtime_of
from tests.support.rows import EVIDENCE, rows
from tests.support.turns import SCOPE, make_turn

N = 4
TOPIC = "altm.proposals"


def _sample(settings: Settings) -> list[TurnEvent]:
    lines = [line for line in sample_path().read_text().splitlines() if line.strip()]
    return [e for e in (read_line(line, settings) for line in lines) if isinstance(e, TurnEvent)]


class RowByRowLink(LinkProcessor):
    """``link`` as it was: one proposal per node and per edge (what older records on the log hold)."""

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        out: list[Proposal] = []
        for p in await super().process(event, ctx):
            assert isinstance(p, LinkMemoryProposal)
            assert event.event_id == p.cause_event_id
            out += [proposal(UpsertNodeProposal, scope=p.scope, processor=self.name, cause=event, node=n)
                    for n in p.links.nodes]
            out += [proposal(UpsertEdgeProposal, scope=p.scope, processor=self.name, cause=event, edge=e)
                    for e in p.links.edges]
        return out


def _processors(link: LinkProcessor) -> list[Processor]:
    return [link if isinstance(p, LinkProcessor) else p for p in default_processors()]


async def _run(settings: Settings, data_dir: Path, link: LinkProcessor) -> tuple[str, Counter[str], Counter[str]]:
    """The state hash, the ops of the proposals and of the committed changes the sample conversation gives."""
    s = settings.model_copy(update={"data_dir": data_dir, "embedder": "none"})
    async with embedded(s, processors=_processors(link)) as deployment:
        rt = runtime_of(deployment)
        await rt.publish(_sample(s))
        await rt.run_until_idle()
        proposals = Counter(_op(r) for r in await rt.log.read_all([topic_name(Topic.PROPOSALS, s.topic_prefix)]))
        changes: Counter[str] = Counter()
        for r in await rt.log.read_all([topic_name(Topic.CHANGES, s.topic_prefix)]):
            marker = change_marker(r)
            assert marker is not None and marker.op is not None
            if marker.status is ChangeStatus.COMMITTED:
                changes[marker.op.value] += 1
    return state_hash(data_dir), proposals, changes


def _op(record: Record) -> str:
    return str(orjson.loads(record.value)["op"])


async def test_link_proposes_one_proposal_per_memory_and_the_graph_is_the_same(settings: Settings,
                                                                               tmp_path: Path) -> None:
    one_each = await _run(settings, tmp_path / "row_by_row", RowByRowLink())
    together = await _run(settings, tmp_path / "together", LinkProcessor())
    assert together[0] == one_each[0]  # nodes, edges, scenes (L3), facets: the same state
    assert one_each[1][ProposalOp.UPSERT_EDGE.value] > 0 and one_each[1][ProposalOp.LINK_MEMORY.value] == 0
    assert together[1][ProposalOp.UPSERT_EDGE.value] == together[1][ProposalOp.UPSERT_NODE.value] == 0
    linked = together[1][ProposalOp.LINK_MEMORY.value]
    assert 0 < linked <= together[2][ProposalOp.UPSERT_MEMORY.value]  # at most one per memory stored
    row_changes = one_each[2][ProposalOp.UPSERT_EDGE.value] + one_each[2][ProposalOp.UPSERT_NODE.value]
    assert together[2][ProposalOp.LINK_MEMORY.value] <= linked < row_changes / 3  # the sample: about 1 in 5
    assert sum(together[2].values()) < sum(one_each[2].values()) * 0.6
    assert rows(tmp_path / "together", "SELECT 1 FROM memories WHERE layer='L3'")  # scenes were derived


# -- the writer's op ---------------------------------------------------------------------------------------------


@pytest.fixture
def writer(settings: Settings) -> Iterator[Writer]:
    shards = ShardSet(settings.data_dir, N)
    yield Writer(shards, settings)
    shards.close()


def _record(p: Proposal, offset: int) -> Record:
    return Record(TOPIC, partition_for(p.key, N), offset, p.key, encode(p))


async def _stored_message(writer: Writer, content: str = "Dana moved Billing to Postgres.") -> UpsertMemoryProposal:
    (p,) = await CaptureProcessor().process(make_turn(1, content), ProcessorContext(settings=Settings()))
    assert isinstance(p, UpsertMemoryProposal)
    (change,) = writer.apply(_record(p, 0), N).changes
    assert change.status is ChangeStatus.COMMITTED
    return p


def _links(memory_id: str, names: Sequence[str], scope: Scope = SCOPE, *, edge_scope: Scope = SCOPE
           ) -> LinkMemoryProposal:
    nodes = tuple(GraphNode(node_id=f"node_{n}", scope=scope, node_type=NodeType.ENTITY, name=n,
                            method=Method.HEURISTIC) for n in names)
    edges = tuple(GraphEdge(edge_id=f"edge_{n.node_id}", scope=edge_scope, src_id=memory_id, dst_id=n.node_id,
                            edge_type=EdgeType.MENTIONS, evidence=(memory_id,), method=Method.HEURISTIC)
                  for n in nodes)
    cause = make_turn(1, "cause")
    return proposal(LinkMemoryProposal, scope=scope, processor="link", cause=cause,
                    links=MemoryLinks(memory_id=memory_id, scope=scope, nodes=nodes, edges=edges))


def _graph(writer: Writer, partition: int) -> tuple[list[str], list[str]]:
    db = writer.shards.get(partition)._db
    return ([str(r[0]) for r in db.execute("SELECT node_id FROM graph_nodes ORDER BY node_id")],
            [str(r[0]) for r in db.execute("SELECT edge_id FROM graph_edges ORDER BY edge_id")])


async def test_a_link_is_one_step_with_one_change_naming_the_mentioned_nodes(writer: Writer) -> None:
    msg = await _stored_message(writer)
    link = _links(msg.memory.memory_id, ["Dana", "Billing"])
    (change,) = writer.apply(_record(link, 1), N).changes
    assert change.status is ChangeStatus.COMMITTED and change.op is ProposalOp.LINK_MEMORY
    assert change.memory_id == msg.memory.memory_id
    assert change.mentioned_ids == ("node_Billing", "node_Dana")
    partition = partition_for(link.key, N)
    assert _graph(writer, partition) == (["node_Billing", "node_Dana"], ["edge_node_Billing", "edge_node_Dana"])
    (again,) = writer.apply(_record(link, 2), N).changes  # delivered again: nothing changes, no scene to redo
    assert again.status is ChangeStatus.UNCHANGED and again.mentioned_ids == ()
    more = _links(msg.memory.memory_id, ["Dana", "Billing", "Postgres"])
    (grown,) = writer.apply(_record(more, 3), N).changes
    assert grown.status is ChangeStatus.COMMITTED and grown.mentioned_ids == ("node_Postgres",)


async def test_a_link_of_a_memory_not_stored_is_refused_whole(writer: Writer) -> None:
    link = _links("mem_missing", ["Dana"])
    (change,) = writer.apply(_record(link, 0), N).changes
    assert change.status is ChangeStatus.REJECTED and change.reason is not None and "mem_missing" in change.reason
    assert _graph(writer, partition_for(link.key, N)) == ([], [])  # not even the node


async def test_a_link_whose_parts_belong_to_another_user_is_refused(writer: Writer) -> None:
    msg = await _stored_message(writer)
    other = SCOPE.model_copy(update={"user_id": "mallory"})
    link = _links(msg.memory.memory_id, ["Dana"], edge_scope=other)
    (change,) = writer.apply(_record(link, 1), N).changes
    assert change.status is ChangeStatus.REJECTED and change.reason is not None and "mallory" in change.reason
    assert _graph(writer, partition_for(link.key, N)) == ([], [])


async def test_a_link_of_an_erased_memory_is_void_not_refused(writer: Writer, settings: Settings) -> None:
    msg = await _stored_message(writer)
    assert await _erase(writer, msg) is ChangeStatus.COMMITTED
    link = _links(msg.memory.memory_id, ["Dana"])
    (change,) = writer.apply(_record(link, 5), N).changes
    assert change.status is ChangeStatus.UNCHANGED and change.reason is not None and "erased" in change.reason
    partition = partition_for(link.key, N)
    assert _graph(writer, partition) == ([], [])
    assert not rows(settings.data_dir, "SELECT 1 FROM rejections")


async def _erase(writer: Writer, msg: UpsertMemoryProposal) -> ChangeStatus:
    erasure = Erasure(target="memory", memory_id=msg.memory.memory_id, reason="test")
    p = proposal(EraseProposal, scope=SCOPE, processor="control", cause=make_turn(2, "erase"), erasure=erasure)
    (change, *_) = writer.apply(_record(p, 4), N).changes
    return change.status


async def test_a_link_of_another_users_memory_in_the_same_shard_is_refused(writer: Writer) -> None:
    """Found by the review: the memory to link was looked up by id alone, whoever it belongs to."""
    home = partition_for(SCOPE.home, N)
    other = next(s for s in (SCOPE.model_copy(update={"user_id": f"mallory{i}"}) for i in range(100))
                 if partition_for(s.home, N) == home)
    (theirs,) = await CaptureProcessor().process(make_turn(1, "Mallory moved Billing.", scope=other),
                                                 ProcessorContext(settings=Settings()))
    assert isinstance(theirs, UpsertMemoryProposal)
    (stored,) = writer.apply(_record(theirs, 0), N).changes
    assert stored.status is ChangeStatus.COMMITTED
    link = _links(theirs.memory.memory_id, ["Billing"])  # proposed under SCOPE's home
    (change,) = writer.apply(_record(link, 1), N).changes
    assert change.status is ChangeStatus.REJECTED and change.reason is not None and "no memory to link" in change.reason
    assert _graph(writer, home) == ([], [])


async def test_an_erasure_leaves_the_same_graph_whether_a_shared_edge_came_before_or_after_it(
        settings: Settings, tmp_path: Path) -> None:
    """Found by the review (older than link_memory): an edge two memories share (Billing and Postgres
    co-occur in both) kept the erased memory in its evidence, and its weight, when the other memory's link came
    before the erasure, and not when it came after. The graph must be a function of what is left."""
    from tests.support.memories import store_with

    first = make_turn(1, "Billing moved to Postgres last night.", session="s1")
    second = make_turn(2, "Billing on Postgres is fast now.", session="s2")

    async def graph(data_dir: Path, erase_between: bool) -> list[dict[str, object]]:
        s = settings.model_copy(update={"data_dir": data_dir, "embedder": "none"})
        async with store_with(s, [first] if erase_between else [first, second]) as (rt, app):
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
            if erase_between:
                await rt.publish([second])
                await rt.run_until_idle()
        return rows(data_dir, f"SELECT edge_id, src_id, dst_id, {EVIDENCE}, weight FROM graph_edges ORDER BY edge_id")

    before = await graph(tmp_path / "both_then_erase", erase_between=False)
    after = await graph(tmp_path / "erase_between", erase_between=True)
    # a co-occurrence of two nodes (Billing, Postgres) is among the edges left
    assert any(str(r["src_id"]).startswith("node_") and str(r["dst_id"]).startswith("node_") for r in after)
    assert before == after
