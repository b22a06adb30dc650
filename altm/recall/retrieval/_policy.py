"""The scope policy as vector payload filters (the SQL side lives with the store's queries)."""

from __future__ import annotations

from altm.store import ScopePolicy
from altm.vectors import VectorFilter

__all__ = ["ScopePolicy", "vector_filters"]


def vector_filters(policy: ScopePolicy) -> list[VectorFilter]:
    """One payload filter per policy group; a point matching any of them is admitted."""
    s = policy.scope
    out = []
    for layers, agent, session in policy.groups():
        eq = {"tenant_id": s.tenant_id, "workspace_id": s.workspace_id, "user_id": s.user_id}
        if agent:
            eq["agent_id"] = s.agent_id
        if session:
            eq["session_id"] = policy.session_id or ""
        out.append(VectorFilter(equals=eq, any_of={"layer": layers}))
    return out
