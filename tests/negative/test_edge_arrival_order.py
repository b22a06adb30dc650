"""A graph edge's method and label are whichever proposal arrived last (red-team review of the graph).

README: "Derived state is recomputed from what is stored, so the final state does not depend on arrival order:
the same input gives the same ``altm state-hash`` with any partition count, embedded or on Kafka." The writer
keeps that for nodes (the least spelling and method, merged attributes: ``test_writer.py``
``test_a_nodes_method_and_attributes_do_not_depend_on_arrival_order``) and for an edge's evidence, weight and
confidence (a union, a product, a maximum), but an edge's ``method`` and ``label`` are copied from the proposal
being applied. With a model for the GRAPH task, ``link`` links an L2 atom with ``method=llm`` and its L0
message (or another memory) with the rules (``heuristic``), and both propose the same CO_OCCURS edge (its id
names the scope, type and ends, not the method); two atoms whose model named a relation between the same two
entities ("works at", "founded") propose the same RELATED edge with two labels. Which row is stored then depends
on which link proposal the writer met last (two workers, a replay with another batching).
Expected: the same set of link proposals gives the same edge rows in any order.
Suspected cause: ``altm/pipeline/writer/ops/graph.py`` ``_put_edge`` (``"label": edge.label``,
``"method": edge.method.value`` and ``unit_weight`` taken from the proposal, unlike ``_put_node``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from altm.bus import Record
from altm.core import (
    LinkMemoryProposal,
    MemoryUnit,
    Method,
    NodeType,
    Proposal,
    UpsertMemoryProposal,
    encode,
    partition_for,
)
from altm.core.settings import Settings
from altm.pipeline.processors import CaptureProcessor, ProcessorContext
from altm.pipeline.processors.link import ExtractedRelation, _links
from altm.pipeline.writer import Writer
from altm.store import ShardSet
from tests.support.turns import SCOPE, make_turn

N = 4
TOPIC = "altm.proposals"
EDGES = "SELECT edge_id, edge_type, label, method, weight, confidence, evidence_count FROM graph_edges ORDER BY edge_id"


async def _captured(i: int, text: str) -> UpsertMemoryProposal:
    (p,) = await CaptureProcessor().process(make_turn(i, text), ProcessorContext(settings=Settings()))
    assert isinstance(p, UpsertMemoryProposal)
    return p


def _link(mem: MemoryUnit, method: Method, label: str | None) -> LinkMemoryProposal:
    named = [(NodeType.ENTITY, "Dana"), (NodeType.ENTITY, "Acme")]
    relations = [ExtractedRelation(src="Dana", dst="Acme", label=label)] if label else []
    links = _links(mem, named, relations, method)
    assert links is not None
    return LinkMemoryProposal(event_id=f"prop-link-{mem.memory_id}", scope=SCOPE, processor="link",
                              timestamp=datetime(2026, 11, 2, tzinfo=UTC), links=links)


def _stored(data_dir: Path, settings: Settings, proposals: list[Proposal]) -> list[tuple[object, ...]]:
    shards = ShardSet(data_dir, N)
    try:
        writer = Writer(shards, settings)
        for offset, p in enumerate(proposals):
            writer.apply(Record(TOPIC, partition_for(p.key, N), offset, p.key, encode(p)), N)
        return [tuple(r) for r in shards.get(partition_for(SCOPE.home, N))._db.execute(EDGES)]
    finally:
        shards.close()


async def test_the_same_links_in_another_order_store_the_same_edges(settings: Settings) -> None:
    said = [await _captured(i, text) for i, text in enumerate(
        ["Dana works at Acme.", "Dana works at Acme, she told us.", "Dana founded Acme."], 1)]
    rules = _link(said[0].memory, Method.HEURISTIC, None)          # an L0 message, linked by the rules
    model = _link(said[1].memory, Method.LLM, "works at")          # an atom the GRAPH model linked
    other = _link(said[2].memory, Method.LLM, "founded")           # another atom, another relation label
    forward = _stored(settings.data_dir / "a", settings, [*said, rules, model, other])
    backward = _stored(settings.data_dir / "b", settings, [*said, other, model, rules])
    assert {r[1] for r in forward} == {"MENTIONS", "CO_OCCURS", "RELATED"}
    # actual: the CO_OCCURS edge is 'llm' in one store and 'heuristic' in the other, and the RELATED edge is
    # labelled 'founded' in one and 'works at' in the other
    shared = {r[1]: r[2:] for r in forward if r[1] != "MENTIONS"}  # (label, method, weight, confidence, count)
    assert shared == {r[1]: r[2:] for r in backward if r[1] != "MENTIONS"}
    assert forward == backward
