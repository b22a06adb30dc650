"""Read queries behind a memory's page in the memory browser: the scopes a key prefix covers, evidence edges both
ways, a memory's audit history and its graph neighbourhood.

Like every read of the application, each query is routed to the shard of the scope home and filtered by the
scope's tenant, workspace and user inside SQL; whether a memory at the other end of an edge may be shown is
decided by the caller with :meth:`MemoryQueries.visible` (the recall policy), never here.
"""

from __future__ import annotations

from typing import Any

from altm.core import Scope
from altm.store._queries import Row, _Routed

_HOME = "tenant_id = ? AND workspace_id = ? AND user_id = ?"


def _home(scope: Scope) -> list[Any]:
    return [scope.tenant_id, scope.workspace_id, scope.user_id]


class InspectionQueries(_Routed):
    def scopes_under(self, prefix: list[str], limit: int = 200) -> list[str]:
        """Every agent scope (``T/W/U/A``) with memories under ``prefix`` (1 to 4 parts), sorted."""
        columns = ("tenant_id", "workspace_id", "user_id", "agent_id")
        where = " AND ".join(f"{c} = ?" for c in columns[: len(prefix)]) or "1"
        found: set[str] = set()
        for row in self._everywhere(
                f"SELECT DISTINCT tenant_id, workspace_id, user_id, agent_id FROM memories WHERE {where} "
                "ORDER BY 1, 2, 3, 4 LIMIT ?", [*prefix, limit]):
            found.add("/".join(str(row[c]) for c in columns))
        return sorted(found)[:limit]

    def evidence_of(self, scope: Scope, memory_id: str) -> list[str]:
        """The lower-layer memories ``memory_id`` was derived from (ids; visibility is the caller's)."""
        return [str(r["evidence_id"]) for r in self._rows(
            scope, "SELECT evidence_id FROM evidence_edges WHERE memory_id = ? ORDER BY evidence_id", [memory_id])]

    def derived_from(self, scope: Scope, memory_id: str, limit: int = 50) -> list[str]:
        """The memories derived from ``memory_id`` (ids; visibility is the caller's)."""
        return [str(r["memory_id"]) for r in self._rows(
            scope, "SELECT memory_id FROM evidence_edges WHERE evidence_id = ? ORDER BY memory_id LIMIT ?",
            [memory_id, limit])]

    def audit(self, scope: Scope, memory_id: str, limit: int = 200) -> tuple[list[Row], int]:
        """The newest ``limit`` audit rows of the memory's row (its evidence is one of its fields), oldest of
        those first, and how many older rows there are."""
        rows = self._rows(scope, (
            "SELECT audit_id, at, proposal_id, actor, action, target_table, old_value, new_value, redacted "
            "FROM audit_log WHERE target_table = 'memories' AND target_id = ? ORDER BY audit_id DESC LIMIT ?"),
            [memory_id, limit])
        total = int(self._rows(scope, "SELECT COUNT(*) AS n FROM audit_log WHERE target_table = 'memories' AND "
                               "target_id = ?", [memory_id])[0]["n"])
        return rows[::-1], max(0, total - len(rows))

    def edges_at(self, scope: Scope, endpoint_id: str, limit: int = 40) -> list[Row]:
        """Graph edges (not rejected) of the scope's user with ``endpoint_id`` at either end, heaviest first."""
        return self._rows(scope, (
            f"SELECT edge_id, agent_id, src_id, dst_id, edge_type, label, weight FROM graph_edges WHERE {_HOME} "
            "AND rejected = 0 AND (src_id = ? OR dst_id = ?) ORDER BY weight DESC, edge_id LIMIT ?"),
            [*_home(scope), endpoint_id, endpoint_id, limit])

    def node(self, scope: Scope, node_id: str) -> Row | None:
        """A graph node of the scope's agent (nodes are per agent), or None."""
        rows = self._rows(scope, (
            f"SELECT node_id, node_type, name FROM graph_nodes WHERE node_id = ? AND {_HOME} AND agent_id = ?"),
            [node_id, *_home(scope), scope.agent_id])
        return rows[0] if rows else None

    def erasure_reach(self, scope: Scope, target: str, *, memory_id: str | None = None,
                      session_id: str | None = None) -> list[Row]:
        """Every memory an erasure would remove: what it names (the writer's ``erasure_seeds``) and, transitively,
        every memory derived from those (``dependants``) — L4 facets and other agents' memories included."""
        named: dict[str, tuple[str, list[str | None]]] = {
                 "memory": ("memory_id = ?", [memory_id]),
                 "session": ("agent_id = ? AND session_id = ?", [scope.agent_id, session_id]),
                 "agent": ("agent_id = ?", [scope.agent_id]),
                 "user": ("1 = 1", [])}
        where, args = named[target]
        return self._rows(scope, (
            "WITH RECURSIVE reach(id) AS ("
            f"SELECT memory_id FROM memories WHERE {_HOME} AND {where} "
            "UNION SELECT e.memory_id FROM evidence_edges e JOIN reach r ON e.evidence_id = r.id) "
            "SELECT m.memory_id, m.layer, m.agent_id, m.session_id FROM reach "
            "JOIN memories m ON m.memory_id = reach.id ORDER BY m.layer, m.memory_id"), [*_home(scope), *args])
