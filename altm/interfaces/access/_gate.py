"""What a caller may do, decided in one place: every HTTP route and MCP tool asks its :class:`Gate` before it
calls the app.

Key levels (``altm keys create NAME PREFIX``):

* an **agent** key (``TENANT/WORKSPACE/USER/AGENT``) runs the protocol and recalls within its agent: that
  agent's L0-L3 and, read-only, the L4 persona of its user (recall's own scope policy); it may pin, unpin and
  erase its agent's memories, sessions and the agent itself;
* a **user** key (``TENANT/WORKSPACE/USER``, or a workspace or tenant prefix above it) does all that for every
  agent of the users it covers, and the user-wide operations: the review queue and its decisions, curation of
  L4 facets, erasure of the whole user;
* an **admin** key (``--admin``) may also read the deployment's stats and replay the log (all tenants).

A refusal names the key's own prefix, never the scope a foreign id belongs to; a memory or cycle outside the
caller's reach answers like an unknown one.
"""

from __future__ import annotations

from collections.abc import Iterable

from altm.app import MemoryApp, ScopeDenied, unknown_cycle
from altm.core import Scope
from altm.interfaces.access._keys import ApiKey


class Gate:
    """The checks for one caller; ``key=None`` is the trusted local caller (stdio MCP, the CLI)."""

    def __init__(self, memory: MemoryApp, key: ApiKey | None) -> None:
        self.memory = memory
        self.key = key

    def _refuse(self, why: str) -> ScopeDenied:
        assert self.key is not None
        return ScopeDenied(f"key {self.key.name!r} (limited to {self.key.scope_prefix!r}) {why}")

    def recall(self, scope: Scope) -> Scope:
        """The runtime protocol and recall on ``scope``: within the key's prefix."""
        if self.key is not None and not self.key.allows(scope):
            raise self._refuse("may not act on that scope")
        return scope

    def cycle(self, cycle_id: str) -> None:
        """Commit or abort: a cycle outside the key's prefix answers like an unknown one."""
        if self.key is not None and not self.key.allows(self.memory.find_cycle(cycle_id).scope):
            raise unknown_cycle(cycle_id)

    def user(self, scope: Scope, what: str) -> Scope:
        """A user-wide operation (``what``, for the message): a key that covers the whole user."""
        self.recall(scope)
        if self.key is not None and self.key.bound_to_agent:
            raise self._refuse(f"is bound to one agent; {what} covers every agent of the user and needs a user key")
        return scope

    def curate(self, scope: Scope, memory_ids: Iterable[str], what: str) -> Scope:
        """Pin, unpin or erase memories: each visible to ``scope`` (unknown otherwise), and an L4 facet (shared by
        every agent of the user) only with a user key."""
        self.recall(scope)
        for memory_id in memory_ids:
            row = self.memory.recall.memory(scope, memory_id)
            if row["layer"] == "L4" and self.key is not None and self.key.bound_to_agent:
                raise self._refuse(f"is bound to one agent; the L4 facet {memory_id} belongs to the whole user "
                                   f"and {what} needs a user key")
        return scope

    def erase(self, scope: Scope, target: str, memory_id: str | None, session_id: str | None = None) -> Scope:
        """An erasure: the user needs a user key; a memory, a session or the agent needs one too when what the
        erasure reaches (what was derived from them) includes memories the whole user shares (L4 facets) or
        another agent's memories."""
        if target == "user":
            return self.user(scope, "erasing the user")
        if target == "memory" and memory_id is not None:
            self.curate(scope, [memory_id], "erasing it")
        else:
            self.recall(scope)  # a session or the agent of the scope: the key's own
        if self.key is not None and self.key.bound_to_agent:
            reach = self.memory.recall.erasure_reach(scope, target, memory_id=memory_id, session_id=session_id)
            shared = [r for r in reach if r["layer"] == "L4" or r["agent_id"] != scope.agent_id]
            if shared:
                raise self._refuse(
                    f"is bound to one agent; erasing this {target} also erases {len(shared)} memories derived from "
                    "it that the whole user shares (L4 facets or other agents' memories): that needs a user key")
        return scope

    def operate(self, what: str) -> None:
        """Deployment-wide operations (stats, replay): an admin key."""
        if self.key is not None and not self.key.admin:
            raise ScopeDenied(f"{what} covers every tenant: an admin key is needed")
