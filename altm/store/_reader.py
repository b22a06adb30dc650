"""Read-only queries that processors need, routed to the shard of the scope home.

Every query is filtered by scope inside SQL. Processors get this through their context; they never write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from altm.core import Layer, MemoryUnit, Scope
from altm.core.partitioner import partition_for
from altm.store._conversation import in_conversation_order
from altm.store._rows import MEMORY_COLUMNS, row_to_memory
from altm.store._shardset import ShardSet
from altm.store._sql import SCENE_MEMBERS
from altm.store._tx import upsert_applied

_COLS = ", ".join(MEMORY_COLUMNS)
_AGENT = "tenant_id=? AND workspace_id=? AND user_id=? AND agent_id=?"
_HOME = "tenant_id=? AND workspace_id=? AND user_id=?"
_UNMERGED = "AND lc_state IS NOT 'merged'"


class SessionLine(NamedTuple):
    """One message of a session as :meth:`MemoryReader.session_read` first sees it: enough to tell whether to
    decode it."""

    memory_id: str
    content_hash: str


class SceneMembers(NamedTuple):
    """What a scene is made of: the sessions its atoms come from (sorted) and its first atoms' ids."""

    sessions: list[str]
    memory_ids: list[str]


def _agent_args(scope: Scope) -> list[str]:
    return [scope.tenant_id, scope.workspace_id, scope.user_id, scope.agent_id]


def _home_args(scope: Scope) -> list[str]:
    return [scope.tenant_id, scope.workspace_id, scope.user_id]


class MemoryReader:
    def __init__(self, shards: ShardSet) -> None:
        self.shards = shards

    def _query(self, scope: Scope, sql: str, args: list[Any]) -> list[MemoryUnit]:
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return [row_to_memory(r) for r in shard._db.execute(sql, args)]

    def get(self, scope: Scope, memory_id: str) -> MemoryUnit | None:
        rows = self._query(scope, f"SELECT {_COLS} FROM memories WHERE memory_id=? AND {_HOME}",
                           [memory_id, *_home_args(scope)])
        return rows[0] if rows else None

    def holds(self, scope: Scope, memory_id: str) -> bool:
        """The memory is stored, in ``scope``'s home (:meth:`get` without reading it)."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return shard._db.execute(f"SELECT 1 FROM memories WHERE memory_id=? AND {_HOME}",
                                 [memory_id, *_home_args(scope)]).fetchone() is not None

    def removed_since(self, scope: Scope, memory_id: str, made_from: Sequence[str]) -> bool:
        """The memory (a derived one, whose id is its statement's) was removed (retention forgot it, an erasure
        took it: the audit log has it) after the newest of ``made_from`` (what it stands on) was stored: it was
        gone on purpose, not yet made from what was said since."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        removal = shard._db.execute(
            "SELECT MAX(audit_id) FROM audit_log WHERE target_table='memories' AND target_id=? "
            "AND action IN ('forget', 'erase')", (memory_id,)).fetchone()[0]
        if removal is None:
            return False
        ids = list(made_from)
        made = shard._db.execute(
            f"SELECT MAX(audit_id) FROM audit_log WHERE target_table='memories' AND action='insert' "
            f"AND target_id IN ({', '.join('?' for _ in ids)})", ids).fetchone()[0] if ids else None
        return made is None or int(removal) > int(made)

    def erasure_pending(self, scope: Scope, memory_ids: Iterable[str]) -> bool:
        """One of ``memory_ids`` has a tombstone waiting for its erasure (a replay applies it once it reaches
        it): stored for now, its content goes to no model (the source erased it, and its cached answers with
        it)."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return False
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return shard._db.execute(
            f"SELECT 1 FROM tombstones WHERE memory_id IN ({', '.join('?' for _ in ids)}) AND pending = 1 "
            f"AND {_HOME} LIMIT 1", [*ids, *_home_args(scope)]).fetchone() is not None

    def upsert_applied(self, scope: Scope, memory_id: str, proposal_id: str) -> bool:
        """The memory is stored and the upsert ``proposal_id`` was applied to it (the audit log names it): the
        writer applies a memory upsert once, so delivered again this proposal would change nothing."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return upsert_applied(shard._db, memory_id, proposal_id, _home_args(scope))

    def session_messages(self, scope: Scope, session_id: str) -> list[MemoryUnit]:
        """The L0 messages of one session of one agent, in conversation order."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return [row_to_memory(r) for r in in_conversation_order(shard._db.execute(
            f"SELECT {_COLS} FROM memories WHERE {_AGENT} AND session_id=? AND layer='L0' ORDER BY valid_from",
            [*_agent_args(scope), session_id]).fetchall())]

    def session_read(self, scope: Scope, session_id: str, wanted: Callable[[SessionLine], bool]
                     ) -> tuple[int, list[MemoryUnit]]:
        """How many L0 messages the session has, and those of them ``wanted`` (the first always), decoded, in
        the order of :meth:`session_messages`; one read, and only the wanted rows become memories."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        count, out = 0, []
        for r in in_conversation_order(shard._db.execute(
                f"SELECT {_COLS} FROM memories WHERE {_AGENT} AND session_id=? AND layer='L0' ORDER BY valid_from",
                [*_agent_args(scope), session_id]).fetchall()):
            if count == 0 or wanted(SessionLine(str(r["memory_id"]), str(r["content_hash"]))):
                out.append(row_to_memory(r))
            count += 1
        return count, out

    def atoms_with(
        self, scope: Scope, attribute: str, value: str, layer: Layer = Layer.L2, *, user_wide: bool = False
    ) -> list[MemoryUnit]:
        """Memories of the agent (or of all the user's agents) whose ``attributes[attribute] == value``."""
        where, args = (_HOME, _home_args(scope)) if user_wide else (_AGENT, _agent_args(scope))
        return self._query(
            scope,
            f"SELECT {_COLS} FROM memories WHERE {where} AND layer=? "
            f"AND json_extract(attributes, '$.{attribute}') = ? ORDER BY valid_from, memory_id",
            [*args, layer.value, value],
        )

    def same_content(self, scope: Scope, layer: Layer, kind: str, content_hash: str, *, merged: bool = True
                     ) -> list[MemoryUnit]:
        """The memories of ``scope``'s agent with this layer, kind and content hash; without those merged into
        another (a duplicate folded into its canonical memory) unless ``merged``: a line said a thousand times is
        a group of a thousand, of which one or two are not merged."""
        return self._query(
            scope,
            # the content hash picks a row or two; the scope index would visit every atom of the agent
            f"SELECT {_COLS} FROM memories INDEXED BY memories_content_hash WHERE {_AGENT} AND layer=? AND kind=? "
            f"AND content_hash=? {'' if merged else _UNMERGED} "
            "ORDER BY valid_from, memory_id",
            [*_agent_args(scope), layer.value, kind, content_hash],
        )

    def held_pending(self, scope: Scope, action_id: str) -> bool:
        """The held action ``action_id`` of ``scope``'s user waits for review."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return shard._db.execute(f"SELECT 1 FROM held_actions WHERE action_id=? AND status='pending' AND {_HOME}",
                                 [action_id, *_home_args(scope)]).fetchone() is not None

    def facet_versions(self, scope: Scope, facet_key: str) -> list[MemoryUnit]:
        """L4 facet versions of the whole user (L4 is shared across the user's agents)."""
        return self._query(
            scope,
            f"SELECT {_COLS} FROM memories WHERE {_HOME} AND layer='L4' "
            "AND json_extract(attributes, '$.facet_key') = ? ORDER BY valid_from, memory_id",
            [*_home_args(scope), facet_key],
        )

    def edge(self, scope: Scope, edge_id: str) -> dict[str, Any] | None:
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        row = shard._db.execute(f"SELECT * FROM graph_edges WHERE edge_id=? AND {_HOME}",
                                 [edge_id, *_home_args(scope)]).fetchone()
        return None if row is None else dict(row)

    def node(self, scope: Scope, node_id: str) -> dict[str, Any] | None:
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        row = shard._db.execute(f"SELECT * FROM graph_nodes WHERE node_id=? AND {_HOME}",
                                 [node_id, *_home_args(scope)]).fetchone()
        return None if row is None else dict(row)

    def scene_members(self, scope: Scope, node_id: str, limit: int) -> SceneMembers:
        """The L2 atoms of the agent with a MENTIONS edge to ``node_id`` that no reviewer rejected, each content
        once (the first of a kind and content hash in valid-from order): the sessions they come from and the ids
        of the first ``limit``. One scan that reads two columns per atom, so a node mentioned by thousands builds
        no memory per atom."""
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        rows = shard._db.execute(SCENE_MEMBERS, [node_id, *_agent_args(scope)]).fetchall()
        return SceneMembers(sessions=sorted({session or "" for _, session in rows}),
                            memory_ids=[memory_id for memory_id, _ in rows[:limit]])

    def get_each(self, refs: Iterable[tuple[str, Scope]]) -> list[MemoryUnit]:
        """The memories of ``refs`` (memory id, scope) still stored, read scope by scope (:meth:`get_many`)."""
        by_scope: dict[Scope, list[str]] = {}
        for memory_id, scope in refs:
            by_scope.setdefault(scope, []).append(memory_id)
        return [m for scope, ids in by_scope.items() for m in self.get_many(scope, ids)]

    def get_many(self, scope: Scope, memory_ids: Sequence[str]) -> list[MemoryUnit]:
        """The memories of ``memory_ids`` stored in the scope's home, in the order given (missing ones left out)."""
        if not memory_ids:
            return []
        marks = ", ".join("?" * len(memory_ids))
        rows = self._query(scope, f"SELECT {_COLS} FROM memories WHERE memory_id IN ({marks}) AND {_HOME}",
                           [*memory_ids, *_home_args(scope)])
        by_id = {m.memory_id: m for m in rows}
        return [by_id[i] for i in memory_ids if i in by_id]
