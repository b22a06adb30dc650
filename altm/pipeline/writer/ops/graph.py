"""The memory graph: nodes and typed, weighted edges (an edge's evidence accumulates)."""

from __future__ import annotations

import orjson

from altm.core import (
    ChangeStatus,
    EdgeType,
    GraphEdge,
    GraphNode,
    LinkMemoryProposal,
    Proposal,
    UpsertEdgeProposal,
    UpsertNodeProposal,
)
from altm.pipeline.writer.ops._base import Applied, OpContext, Rejection, Row, as_json, target_row
from altm.store import ShardTx, merged_attributes


def _holds(old: Row | None, row: Row) -> bool:
    """The stored row already holds these values (the proposal changes nothing)."""
    return old is not None and all(old[k] == v for k, v in row.items())


def upsert_node(tx: ShardTx, p: UpsertNodeProposal, ctx: OpContext) -> Applied:
    return Applied(ChangeStatus.COMMITTED if _put_node(tx, p.node, p, ctx) else ChangeStatus.UNCHANGED)


def upsert_edge(tx: ShardTx, p: UpsertEdgeProposal, ctx: OpContext) -> Applied:
    return Applied(ChangeStatus.COMMITTED if _put_edge(tx, p.edge, p, ctx) else ChangeStatus.UNCHANGED)


def link_memory(tx: ShardTx, p: LinkMemoryProposal, ctx: OpContext) -> Applied:
    """A memory's nodes, then its edges, in one step: ``committed`` when any row changed, with the nodes whose
    MENTIONS edge from this memory is new or strengthened (their scenes are recomputed). A memory erased since
    it was linked makes the proposal void; one missing for another reason, or of another scope home, a refusal
    (nothing is kept)."""
    links = p.links
    target_row(tx, p, links.memory_id, "memory to link")  # stored, and of this scope home
    changed = [_put_node(tx, node, p, ctx) for node in links.nodes]
    memory, nodes = frozenset((links.memory_id,)), frozenset(node.node_id for node in links.nodes)  # stored now
    mentioned = []
    for edge in links.edges:
        if _put_edge(tx, edge, p, ctx, memories=memory, nodes=nodes):
            changed.append(True)
            if edge.edge_type is EdgeType.MENTIONS:
                mentioned.append(edge.dst_id)
    status = ChangeStatus.COMMITTED if any(changed) else ChangeStatus.UNCHANGED
    return Applied(status, mentioned=tuple(sorted(set(mentioned))))


def _put_node(tx: ShardTx, node: GraphNode, p: Proposal, ctx: OpContext) -> bool:
    """A node's id comes from its normalised name, so spellings of one name ("Last week", "last week") meet in
    one row; the stored spelling and method are the least of those seen and the attributes a merge (not the
    latest), so the row does not depend on the order proposals arrive in (embedded, one worker or several).
    True when the row changed."""
    old = tx.node(node.node_id)
    name, method, attributes = node.name, node.method.value, dict(node.attributes)
    if old is not None:  # every field a function of the proposals seen, not of their order
        name, method = min(str(old["name"]), name), min(str(old["method"]), method)
        attributes = merged_attributes(orjson.loads(str(old["attributes"] or "{}")), attributes)
    row = {
        "node_id": node.node_id, "tenant_id": node.scope.tenant_id, "workspace_id": node.scope.workspace_id,
        "user_id": node.scope.user_id, "agent_id": node.scope.agent_id, "node_type": node.node_type.value,
        "name": name, "attributes": as_json(attributes), "method": method,
    }
    if _holds(old, row):
        return False
    tx.put_node({**row, "recorded_at": ctx.now}, old, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    return True


def _put_edge(tx: ShardTx, edge: GraphEdge, p: Proposal, ctx: OpContext, *,
              memories: frozenset[str] = frozenset(), nodes: frozenset[str] = frozenset()) -> bool:
    """An edge whose ends (memories or nodes) and evidence (memories) are in the shard; ``memories`` and
    ``nodes``: ids the caller has just found or put there, not looked up again. Its evidence is the union of
    what was proposed and its weight follows from it (order-independent): only what it does not cite yet is
    written. True when the row changed."""
    for end in (edge.src_id, edge.dst_id):
        if end not in memories and end not in nodes and not tx.has_memory(end) and tx.node(end) is None:
            raise Rejection(f"edge end {end} is neither a memory nor a graph node in this shard",
                            code="missing_evidence")
    for ev in edge.evidence:
        if ev not in memories and not tx.has_memory(ev):
            raise Rejection(f"edge evidence {ev} is not in this shard", code="missing_evidence")
    old = tx.edge(edge.edge_id)
    added = tx.new_edge_evidence(edge.edge_id, edge.evidence) if old else sorted(set(edge.evidence))
    count = (int(old["evidence_count"]) if old else 0) + len(added)
    confidence = max(edge.confidence, float(old["confidence"]) if old else 0.0)
    # as a node's: every field a function of the proposals seen, not of their order (the least label and
    # method, the greatest unit weight)
    label, method, unit = edge.label, edge.method.value, edge.unit_weight
    if old is not None:
        label = min((x for x in (old["label"], label) if x is not None), default=None)
        method, unit = min(str(old["method"]), method), max(float(old["unit_weight"]), unit)
    row = {
        "edge_id": edge.edge_id, "tenant_id": edge.scope.tenant_id, "workspace_id": edge.scope.workspace_id,
        "user_id": edge.scope.user_id, "agent_id": edge.scope.agent_id, "src_id": edge.src_id,
        "dst_id": edge.dst_id, "edge_type": edge.edge_type.value, "label": label,
        "unit_weight": unit, "weight": unit * count,
        "confidence": confidence, "rejected": int(old["rejected"]) if old else 0,
        "evidence_count": count, "method": method,
    }
    if _holds(old, row):  # the count holds: nothing added
        return False
    tx.put_edge({**row, "recorded_at": ctx.now}, old, added=added, at=ctx.now, proposal_id=p.event_id,
                actor=p.processor)
    return True
