"""link: L0/L2 changes → graph nodes (Entity, Event, Task, Intent, Time) and typed, weighted edges, one
``link_memory`` proposal per memory."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from pydantic import BaseModel, Field

from altm.core import (
    ChangeMarker,
    EdgeType,
    Event,
    GraphEdge,
    GraphNode,
    Kind,
    Layer,
    LinkMemoryProposal,
    MemoryLinks,
    MemoryUnit,
    Method,
    NodeType,
    Proposal,
    derive_id,
    encode,
)
from altm.core.topics import Topic
from altm.models import ChatModel, ModelTask
from altm.pipeline.processors import _rules as rules
from altm.pipeline.processors._base import (
    Processor,
    ProcessorContext,
    committed_memory,
    committed_upsert,
    norm,
    proposal,
)

_KIND_NODE = {Kind.TASK: NodeType.TASK, Kind.ISSUE: NodeType.EVENT, Kind.OUTCOME: NodeType.EVENT,
              Kind.PREFERENCE: NodeType.INTENT, Kind.DECISION: NodeType.INTENT}
_MAX_COOCCUR = 6
_MAX_NODES = 512  # MemoryLinks holds at most 512 nodes and 1,024 edges (512 mentions + 15 co-occurrences + 32)
_MAX_LINK_BYTES = 256 * 1024  # one link proposal, encoded: well inside a Kafka record (1 MiB by default)

_FROM = frozenset({Layer.L0, Layer.L2})


class ExtractedEntity(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: NodeType = NodeType.ENTITY


class ExtractedRelation(BaseModel):
    src: str
    dst: str
    label: str = Field(min_length=1, max_length=64)


class GraphExtraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=32)
    relations: list[ExtractedRelation] = Field(default_factory=list, max_length=32)


def node_id(mem: MemoryUnit, node_type: NodeType, name: str) -> str:
    return derive_id("node", mem.scope.path, node_type.value, norm(name))


def edge_id(mem: MemoryUnit, edge_type: EdgeType, src: str, dst: str, label: str | None = None) -> str:
    """An edge's id: its scope, type and ends, and its label when it has one (each relation a model named is an
    edge of its own, with its own evidence: an erased memory's relation goes with it, not kept on another's)."""
    return derive_id("edge", mem.scope.path, edge_type.value, src, dst, *([norm(label)] if label else []))


class LinkProcessor(Processor):
    name = "link"
    input_topic = Topic.CHANGES

    def __init__(self, chat: ChatModel | None = None) -> None:
        self._chat = chat if chat is not None and chat.serves(ModelTask.GRAPH) else None

    def accepts(self, marker: ChangeMarker) -> bool:
        return committed_upsert(marker, _FROM)

    async def _model_entities(self, mem: MemoryUnit) -> tuple[list[tuple[NodeType, str]], list[ExtractedRelation],
                                                               Method]:
        assert self._chat is not None
        result = await self._chat.structured(ModelTask.GRAPH, mem.scope, [
            {"role": "system", "content": "List the entities (people, organisations, products, files, "
             "identifiers, dates) a memory mentions and the relations between them, as JSON. Only what "
             "the text states."},
            {"role": "user", "content": mem.content},
        ], GraphExtraction, sources=[mem.memory_id, *mem.evidence])
        return [(e.type, e.name) for e in result.value.entities], list(result.value.relations), Method.LLM

    @staticmethod
    def _rule_entities(mem: MemoryUnit) -> tuple[list[tuple[NodeType, str]], list[ExtractedRelation], Method]:
        named = [(NodeType.ENTITY, n) for n in rules.named_entities(mem.content)]
        named += [(NodeType.TIME, d) for d in rules.dates(mem.content)]
        return named, [], Method.HEURISTIC

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        mem = committed_memory(event, _FROM)
        if mem is None or not ctx.require_reader().holds(mem.scope, mem.memory_id):
            return []  # nothing to link, or the memory was erased since this change (a replayed change)
        if self._chat is not None and mem.layer is Layer.L2 and not ctx.require_reader().erasure_pending(
                mem.scope, [mem.memory_id, *mem.evidence]):  # about to be erased (a replay): no model reads it
            named, relations, method = await self._model_entities(mem)
        else:
            named, relations, method = self._rule_entities(mem)
        if mem.layer is Layer.L2 and mem.kind in _KIND_NODE:
            named.append((_KIND_NODE[mem.kind], mem.content[:200]))
        limit = _MAX_NODES
        while True:  # a memory naming very many things is hostile or noise: its surplus entities are not linked
            links = _links(mem, _capped(named, limit), relations, method)
            if links is None or limit == 1 or len(encode(links)) <= _MAX_LINK_BYTES:
                break
            limit //= 2
        if links is None:
            return []  # no node, no edge
        return [proposal(LinkMemoryProposal, scope=mem.scope, processor=self.name, cause=event, links=links)]


MAX_NODE_NAME = 512
"""The longest node name (``GraphNode.name``): a longer one is no node, and the memory's other names stand."""


def _capped(named: list[tuple[NodeType, str]], limit: int) -> list[tuple[NodeType, str]]:
    """At most ``limit`` names, in their order: the ones that stand for the memory (its own node, its dates,
    what a model typed) first, then entities in the room left."""
    if len(named) <= limit:
        return named
    others = [i for i, (t, _) in enumerate(named) if t is not NodeType.ENTITY][:limit]
    entities = [i for i, (t, _) in enumerate(named) if t is NodeType.ENTITY][:limit - len(others)]
    return [named[i] for i in sorted((*others, *entities))]


def _links(mem: MemoryUnit, named: list[tuple[NodeType, str]], relations: list[ExtractedRelation],
           method: Method) -> MemoryLinks | None:
    """The memory's nodes, its MENTIONS edges to them, co-occurrences among its first few entities and dates,
    and the relations a model named between them; None when it names nothing."""
    nodes: dict[str, GraphNode] = {}
    for node_type, name in named:
        if len(name) > MAX_NODE_NAME:  # a presigned URL, a generated path: no entity a memory is found by
            continue
        nid = node_id(mem, node_type, name)
        nodes.setdefault(nid, GraphNode(node_id=nid, scope=mem.scope, node_type=node_type, name=name, method=method))
    if not nodes:
        return None
    edges = [
        # the label is the spelling this memory gave the node (its name is the least spelling of those left:
        # ShardTx._respell_nodes)
        GraphEdge(edge_id=edge_id(mem, EdgeType.MENTIONS, mem.memory_id, nid), scope=mem.scope,
                  src_id=mem.memory_id, dst_id=nid, edge_type=EdgeType.MENTIONS, label=node.name, unit_weight=1.0,
                  evidence=(mem.memory_id,), method=method)
        for nid, node in nodes.items()
    ]
    linked = [n for n in nodes.values() if n.node_type in (NodeType.ENTITY, NodeType.TIME)][:_MAX_COOCCUR]
    for a, b in combinations(sorted(linked, key=lambda n: n.node_id), 2):
        edges.append(GraphEdge(
            edge_id=edge_id(mem, EdgeType.CO_OCCURS, a.node_id, b.node_id), scope=mem.scope,
            src_id=a.node_id, dst_id=b.node_id, edge_type=EdgeType.CO_OCCURS, unit_weight=0.5,
            confidence=0.6, evidence=(mem.memory_id,), method=method,
        ))
    by_name = {norm(n.name): n.node_id for n in nodes.values()}
    for rel in relations:
        src, dst = by_name.get(norm(rel.src)), by_name.get(norm(rel.dst))
        if src and dst and src != dst:
            edges.append(GraphEdge(
                edge_id=edge_id(mem, EdgeType.RELATED, src, dst, rel.label), scope=mem.scope, src_id=src,
                dst_id=dst, edge_type=EdgeType.RELATED, label=norm(rel.label), confidence=0.7,
                evidence=(mem.memory_id,), method=method,
            ))
    return MemoryLinks(memory_id=mem.memory_id, scope=mem.scope, nodes=tuple(nodes.values()), edges=tuple(edges))
