"""A memory as a person inspects it: its row, the evidence chain down to the L0 turns, what was derived from it,
its graph neighbourhood and its audit history. Every memory shown is one the scope may see (the recall policy);
anything else is left out, exactly as if it did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from altm.app._errors import NotFound
from altm.core import Scope
from altm.store import InspectionQueries, MemoryQueries, MemoryRow, ShardSet

AUDIT_ROWS = 200
"""The newest audit rows shown for a memory (a much-cited memory gathers a lifecycle row per use)."""
OTHER_AGENTS_IDS = frozenset({"source_event_id", "source_id", "session_id", "context", "prompt_hash"})
"""Fields of another agent's row (an L4 facet seen from a sibling agent) that name that agent's turns."""
MAX_CHAIN = 60
"""Memories shown in one evidence chain (a scene over many atoms over many turns stays readable)."""
MAX_DEPTH = 5
"""L4 → L3 → L2 → L1 → L0: five layers at most."""
NEIGHBOURS = 24
"""Direct graph neighbours drawn; each entity then shows up to :data:`PER_NODE` other memories."""
PER_NODE = 4


@dataclass(frozen=True)
class ChainLink:
    """One memory of an evidence chain, ``depth`` steps below the inspected memory."""

    depth: int
    row: MemoryRow


@dataclass(frozen=True)
class GraphPoint:
    """A point of the drawn neighbourhood: a graph node (entity, time, ...) or a memory."""

    point_id: str
    label: str
    kind: str  # a node type (Entity, Time, ...) or a layer (L0..L4)
    is_memory: bool
    ring: int  # 0: the inspected memory, 1: its direct neighbours, 2: memories sharing a neighbour
    parent: str | None = None


@dataclass(frozen=True)
class GraphLine:
    src: str
    dst: str
    edge_type: str


@dataclass(frozen=True)
class AuditStep:
    at: str
    actor: str
    action: str
    target: str
    proposal_id: str | None
    changed: dict[str, tuple[str, str]]  # field → (before, after), values as text
    redacted: bool


@dataclass
class Inspection:
    row: MemoryRow
    attributes: dict[str, Any]
    chain: list[ChainLink] = field(default_factory=list)
    derived: list[MemoryRow] = field(default_factory=list)
    points: list[GraphPoint] = field(default_factory=list)
    lines: list[GraphLine] = field(default_factory=list)
    audit: list[AuditStep] = field(default_factory=list)
    older_audit: int = 0  # audit rows older than the ones shown


def _text(value: object) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _changed(old: str | None, new: str | None) -> dict[str, tuple[str, str]]:
    """Field-level difference of two audited row images (JSON objects); a value that is not an object is one field."""
    def load(raw: str | None) -> dict[str, Any]:
        if raw is None:
            return {}
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"value": raw}
        return value if isinstance(value, dict) else {"value": value}

    before, after = load(old), load(new)
    keys = sorted(set(before) | set(after))
    return {k: (_text(before.get(k, "")), _text(after.get(k, ""))) for k in keys if before.get(k) != after.get(k)}


def _other_agents(audit: Any, scope: Scope) -> bool:
    """Whether either image of an audit row is another agent's row (a facet re-cited from another agent's atom
    was that agent's before: its turns and evidence are left out of that step as of a foreign row)."""
    for value in (audit["old_value"], audit["new_value"]):
        try:
            image = orjson.loads(value) if value else None
        except orjson.JSONDecodeError:
            continue
        if isinstance(image, dict) and image.get("agent_id") not in (None, scope.agent_id):
            return True
    return False


class MemoryInspector:
    def __init__(self, shards: ShardSet) -> None:
        self._memories = MemoryQueries(shards)
        self._queries = InspectionQueries(shards)

    def scopes_under(self, prefix: list[str]) -> list[str]:
        return self._queries.scopes_under(prefix)

    def erasure_reach(self, scope: Scope, target: str, *, memory_id: str | None = None,
                      session_id: str | None = None) -> list[dict[str, Any]]:
        return self._queries.erasure_reach(scope, target, memory_id=memory_id, session_id=session_id)

    def inspect(self, scope: Scope, memory_id: str) -> Inspection:
        row = self._memories.visible(scope, memory_id)
        if row is None:
            raise NotFound(f"no memory {memory_id} in scope {scope.path}")
        try:
            attributes = orjson.loads(row["attributes"] or "{}")
        except orjson.JSONDecodeError:
            attributes = {}
        found = Inspection(row=row, attributes=attributes if isinstance(attributes, dict) else {})
        found.chain = self._chain(scope, memory_id)
        found.derived = [r for r in (self._memories.visible(scope, m)
                                     for m in self._queries.derived_from(scope, memory_id)) if r is not None]
        found.points, found.lines = self._neighbourhood(scope, row)
        rows, found.older_audit = self._queries.audit(scope, memory_id, AUDIT_ROWS)
        foreign = row["agent_id"] != scope.agent_id
        found.audit = [AuditStep(at=str(a["at"]), actor=str(a["actor"]), action=str(a["action"]),
                                 target=str(a["target_table"]), proposal_id=a["proposal_id"],
                                 changed={} if a["redacted"] == 1 else self._shown(
                                     scope, _changed(a["old_value"], a["new_value"]),
                                     foreign or _other_agents(a, scope)),
                                 redacted=a["redacted"] == 1)
                       for a in rows]
        return found

    def _shown(self, scope: Scope, changed: dict[str, tuple[str, str]], foreign: bool
               ) -> dict[str, tuple[str, str]]:
        """An audit diff as ``scope`` may see it: on another agent's row (an L4 facet), evidence ids the scope
        cannot see and the fields that name that agent's turns are left out."""
        if not foreign:
            return changed
        out: dict[str, tuple[str, str]] = {}
        for name, (before, after) in changed.items():
            if name in OTHER_AGENTS_IDS:
                continue
            if name == "evidence":
                before, after = self._visible_ids(scope, before), self._visible_ids(scope, after)
            out[name] = (before, after)
        return out

    def _visible_ids(self, scope: Scope, ids_json: str) -> str:
        try:
            ids = orjson.loads(ids_json) if ids_json else []
        except orjson.JSONDecodeError:
            return ""
        if not isinstance(ids, list):
            return ""
        shown = [i for i in ids if isinstance(i, str) and self._memories.visible(scope, i) is not None]
        return orjson.dumps(shown).decode() + (f" (+{len(ids) - len(shown)} of other agents)"
                                               if len(shown) < len(ids) else "")

    def _chain(self, scope: Scope, memory_id: str) -> list[ChainLink]:
        """Depth-first down the evidence edges, each memory once, in the order a reader follows it."""
        out: list[ChainLink] = []
        seen = {memory_id}

        def walk(current: str, depth: int) -> None:
            if depth > MAX_DEPTH:
                return
            for evidence_id in self._queries.evidence_of(scope, current):
                if evidence_id in seen or len(out) >= MAX_CHAIN:
                    continue
                seen.add(evidence_id)
                row = self._memories.visible(scope, evidence_id)
                if row is None:
                    continue
                out.append(ChainLink(depth=depth, row=row))
                walk(evidence_id, depth + 1)

        walk(memory_id, 1)
        return out

    def _point(self, scope: Scope, point_id: str, ring: int, parent: str | None) -> GraphPoint | None:
        if point_id.startswith("node_"):
            node = self._queries.node(scope, point_id)
            if node is None:
                return None
            return GraphPoint(point_id, str(node["name"]), str(node["node_type"]), False, ring, parent)
        row = self._memories.visible(scope, point_id)
        if row is None:
            return None
        return GraphPoint(point_id, row["content"], row["layer"], True, ring, parent)

    def _neighbourhood(self, scope: Scope, row: MemoryRow) -> tuple[list[GraphPoint], list[GraphLine]]:
        centre = row["memory_id"]
        points = {centre: GraphPoint(centre, row["content"], row["layer"], True, 0)}
        lines: list[GraphLine] = []
        for edge in self._queries.edges_at(scope, centre, NEIGHBOURS):
            other = edge["dst_id"] if edge["src_id"] == centre else edge["src_id"]
            point = points.get(other) or self._point(scope, other, 1, centre)
            if point is None:
                continue
            points.setdefault(other, point)
            lines.append(GraphLine(edge["src_id"], edge["dst_id"], str(edge["edge_type"])))
        for hub in [p for p in list(points.values()) if p.ring == 1 and not p.is_memory]:
            shown = 0
            for edge in self._queries.edges_at(scope, hub.point_id, PER_NODE * 3):
                other = edge["dst_id"] if edge["src_id"] == hub.point_id else edge["src_id"]
                if other in points or shown >= PER_NODE:
                    continue
                point = self._point(scope, other, 2, hub.point_id)
                if point is None or not point.is_memory:
                    continue
                points[other] = point
                lines.append(GraphLine(edge["src_id"], edge["dst_id"], str(edge["edge_type"])))
                shown += 1
        return list(points.values()), lines
