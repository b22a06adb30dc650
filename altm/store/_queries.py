"""Read queries of the application (listing, review, governance, cycles, maintenance, proposal outcomes).

Every query is routed to the shard of the scope home and filtered by scope inside SQL, like
:class:`MemoryReader` (the processors' queries). Rows come back as plain dicts of named columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from altm.core import Layer, Scope, partition_for, rejection_item
from altm.store._conversation import conversation_key
from altm.store._policy import ScopePolicy
from altm.store._rows import MemoryRow, memory_row
from altm.store._shardset import ShardSet
from altm.store._tx import MEMORY_ID

Row = dict[str, Any]

_LISTED = ("m.memory_id, m.tenant_id, m.workspace_id, m.user_id, m.agent_id, m.layer, m.kind, m.content, "
           "m.content_hash, m.session_id, m.source_id, m.role, m.valid_from, m.method, m.trust_status, m.lc_state, "
           "m.lc_pinned")


def _with_scope(row: Row) -> Row:
    row["scope"] = "/".join(str(row[k]) for k in ("tenant_id", "workspace_id", "user_id", "agent_id"))
    return row


# an audited change of a memory in what verify judges it by (a row put back or inserted counts)
_JUDGED_CHANGE = " OR ".join(
    ["a.old_value IS NULL"] + [f"json_extract(a.old_value, '$.{c}') IS NOT json_extract(a.new_value, '$.{c}')"
                               for c in ("attributes", "content_hash", "valid_from", "role", "kind")])


class _Routed:
    def __init__(self, shards: ShardSet) -> None:
        self.shards = shards

    def _rows(self, scope: Scope, sql: str, args: list[Any]) -> list[Row]:
        shard = self.shards.get(partition_for(scope.home, self.shards.partitions))
        return [dict(r) for r in shard._db.execute(sql, args)]

    def _everywhere(self, sql: str, args: list[Any]) -> list[Row]:
        return [dict(r) for shard in self.shards.existing() for r in shard._db.execute(sql, args)]


class MemoryQueries(_Routed):
    """Memories as a scope may see them: one visibility rule (the recall policy) for every listing."""

    def visible(self, scope: Scope, memory_id: str) -> MemoryRow | None:
        """The memory if ``scope`` may see it (any session of the agent); None for anything else, whether
        it does not exist or belongs to another scope: the caller cannot tell the two apart."""
        where, args = ScopePolicy(scope, None, l0_across_sessions=True).sql("m")
        rows = self._rows(scope, f"SELECT m.* FROM memories m WHERE m.memory_id = ? AND {where}", [memory_id, *args])
        return memory_row(rows[0]) if rows else None

    def buried(self, scope: Scope, memory_id: str) -> bool:
        """A tombstone of ``scope``'s user names the memory (erased, or forgotten with a tombstone): its id is
        spent, whatever it is said again with."""
        return bool(self._rows(scope, "SELECT 1 FROM tombstones WHERE memory_id = ? AND tenant_id = ? AND "
                                      "workspace_id = ? AND user_id = ? LIMIT 1",
                               [memory_id, scope.tenant_id, scope.workspace_id, scope.user_id]))

    def listing(self, scope: Scope | None, *, session_id: str | None = None, layer: str | None = None,
                kind: str | None = None, limit: int = 50, offset: int = 0) -> list[Row]:
        """Memories visible to ``scope`` (every session when none is given), oldest first; with no scope,
        every memory of the data dir (an operator's view)."""
        if layer is not None and layer not in {x.value for x in Layer}:
            raise ValueError(f"unknown layer {layer!r}; expected one of L0..L4")
        conditions: list[str] = []
        args: list[Any] = []
        if scope is not None:
            layers = tuple(Layer) if layer is None else (Layer(layer),)
            where, args = ScopePolicy(scope, session_id, l0_across_sessions=session_id is None, layers=layers).sql("m")
            conditions.append(where)
        elif layer is not None:
            conditions.append("m.layer = ?")
            args.append(layer)
        if kind is not None:
            conditions.append("m.kind = ?")
            args.append(kind)
        # oldest first, in conversation order (altm.store._conversation): at one time, turn ids in their natural
        # order ("s1-t2" before "s1-t10") and a turn's user message before its reply, as each row's turn_key
        # holds it; the pages are cut in that order (cut in the text order of turn ids, a page held turn 10
        # before 3). The key is stored: computed here for every row of the user, it cost the first page of a long
        # history a Python call per row.
        conditions.append("m.turn_key IS NOT NULL")  # every row's: it lets the listing's own index be read
        sql = (f"SELECT {_LISTED}, m.turn_key FROM memories m WHERE " + " AND ".join(conditions)
               + " ORDER BY m.valid_from, m.turn_key, m.memory_id LIMIT ? OFFSET ?")
        if scope is not None:
            rows = [_with_scope(r) for r in self._rows(scope, sql, [*args, limit, offset])]
        else:
            rows = sorted((_with_scope(r) for r in self._everywhere(sql, [*args, limit + offset, 0])),
                          key=conversation_key)[offset : offset + limit]
        for row in rows:
            del row["turn_key"]  # an order, not a listed column
        return rows


class ReviewQueries(_Routed):
    def queue(self, scope: Scope, *, limit: int = 50) -> dict[str, list[Row]]:
        """Contradicted or uncertain memories, held actions and rejected proposals of the user."""
        home = [scope.tenant_id, scope.workspace_id, scope.user_id]
        memories = self._rows(scope, (
            "SELECT memory_id AS item_id, memory_id, layer, kind, content, trust_status, trust_reason, "
            "trust_contradicting_id, agent_id FROM memories WHERE tenant_id=? AND workspace_id=? AND user_id=? "
            "AND trust_status IN ('contradicted', 'uncertain') AND (trust_method IS NOT 'ground_truth') "
            "AND lc_state NOT IN ('rejected', 'merged') ORDER BY valid_from, memory_id LIMIT ?"), [*home, limit])
        deferred = self._rows(scope, (
            "SELECT action_id AS item_id, action_id, action, target_ids, reason, status FROM held_actions "
            "WHERE tenant_id=? AND workspace_id=? AND user_id=? AND status='pending' "
            "ORDER BY recorded_at, action_id LIMIT ?"), [*home, limit])
        rejected = [{**r, "item_id": rejection_item(r["rejection_id"], r["proposal_id"])} for r in self._rows(scope, (
            "SELECT rejection_id, proposal_id, memory_id, reason, at FROM rejections WHERE json_valid(payload) "
            "AND json_extract(payload, '$.scope.tenant_id') = ? AND json_extract(payload, '$.scope.workspace_id') = ? "
            "AND json_extract(payload, '$.scope.user_id') = ? AND review_status = 'pending' "
            "ORDER BY rejection_id DESC LIMIT ?"), [*home, limit])]
        return {"memories": memories, "held_actions": deferred, "rejections": rejected}


class GovernanceQueries(_Routed):
    def events(self, scope: Scope, *, limit: int = 200) -> list[Row]:
        """The user's newest ``limit`` decision steps, in the order they were made (the oldest ``limit`` were
        listed: past them, a new decision never showed, in the browser or ``altm governance list``)."""
        return self._rows(scope, (
            "SELECT decision_id, decision, step, reason, inputs, at FROM (SELECT decision_id, decision, step, reason, "
            "inputs, at, event_id FROM governance_events "
            "WHERE tenant_id=? AND workspace_id=? AND user_id=? ORDER BY at DESC, decision_id DESC, event_id DESC "
            "LIMIT ?) ORDER BY at, decision_id, event_id"),
            [scope.tenant_id, scope.workspace_id, scope.user_id, limit])

    def decision(self, scope: Scope, decision_id: str) -> list[Row]:
        """Every step of one decision of the scope's user (empty when it is unknown or another user's)."""
        return self._rows(scope, (
            "SELECT decision_id, decision, step, reason, inputs, at FROM governance_events WHERE decision_id = ? "
            "AND tenant_id=? AND workspace_id=? AND user_id=? ORDER BY at, rowid"),  # steps of one moment: as recorded
            [decision_id, scope.tenant_id, scope.workspace_id, scope.user_id])

    def names(self, scope: Scope, decision_id: str) -> tuple[str, ...]:
        """The memories one decision's record names (its inputs and reasons, as an erasure reads them); a
        rollback's are those of the decision it undid (an erasure that takes that decision's record takes the
        rollback's: ``ShardTx._erase_decisions``)."""
        found: set[str] = set()
        seen: set[str] = set()
        todo = [decision_id]
        while todo:
            current = todo.pop()
            seen.add(current)
            for r in self.decision(scope, current):
                found.update(MEMORY_ID.findall(f"{r['inputs'] or ''} {r['reason'] or ''}"))
                undone = orjson.loads(r["inputs"] or "{}").get("decision_id") if r["decision"] == "rollback" else None
                if isinstance(undone, str) and undone not in seen:
                    todo.append(undone)
        return tuple(sorted(found))

    def signal(self, scope: Scope, decision_id: str) -> str | None:
        """The use signal a promotion or demotion was made on (its record's inputs name it), if any."""
        for r in self.decision(scope, decision_id):
            if r["decision"] not in ("promote", "demote"):
                continue
            found = orjson.loads(r["inputs"] or "{}").get("signal_id")
            if isinstance(found, str):
                return found
        return None


@dataclass(frozen=True)
class ProposalOutcome:
    """What the writer did with one proposal, read back from the shard."""

    status: str  # "rejected", "applied" or "pending" (not applied yet, or it changed nothing)
    reason: str | None = None


class OutcomeQueries(_Routed):
    def outcome(self, scope: Scope, proposal_id: str) -> ProposalOutcome:
        rejected = self._rows(scope, "SELECT reason FROM rejections WHERE proposal_id = ? ORDER BY rejection_id DESC "
                              "LIMIT 1", [proposal_id])
        if rejected:
            return ProposalOutcome("rejected", str(rejected[0]["reason"]))
        applied = self._rows(scope, "SELECT 1 AS one FROM audit_log WHERE proposal_id = ? LIMIT 1", [proposal_id])
        return ProposalOutcome("applied" if applied else "pending")

    def tombstones(self, scope: Scope | None = None) -> int:
        if scope is None:
            return sum(int(r["n"]) for r in self._everywhere("SELECT COUNT(*) AS n FROM tombstones", []))
        return int(self._rows(scope, "SELECT COUNT(*) AS n FROM tombstones WHERE tenant_id=? AND workspace_id=? "
                              "AND user_id=?", [scope.tenant_id, scope.workspace_id, scope.user_id])[0]["n"])


class CycleQueries(_Routed):
    """Runtime cycles as the writer stored them (they arrive as control events)."""

    def find(self, cycle_id: str) -> Row | None:
        for shard in self.shards.existing():
            row = shard._db.execute("SELECT * FROM runtime_cycles WHERE cycle_id=?", (cycle_id,)).fetchone()
            if row is not None:
                return dict(row)
        return None


GUARD_HOLD = "write guard: "
"""How the trust reason of a memory the write guard holds for review begins (``altm.pipeline.writer.ops.memory``
writes it)."""


class MaintenanceQueries:
    """Candidates of the maintenance passes (retention, compaction, trust sweep), across the data dir."""

    def __init__(self, shards: ShardSet) -> None:
        self.shards = shards

    def older_than(self, layer: str, cutoff: str) -> list[Row]:
        """Memories of ``layer`` valid since before ``cutoff``, not pinned: current ones, the versions a newer
        one superseded and the exact duplicates folded into another alike (what is past retention is past it,
        whatever replaced it)."""
        return [dict(r) for shard in self.shards.existing() for r in shard._db.execute(
            "SELECT memory_id, tenant_id, workspace_id, user_id, agent_id, layer, kind, content, valid_from "
            "FROM memories WHERE layer = ? AND valid_from < ? AND lc_pinned = 0 "
            "ORDER BY valid_from, memory_id", (layer, cutoff))]

    def last_uses(self) -> list[Row]:
        """Every current memory with its compression level and the time of its last use (citation or
        helpful feedback), for compaction."""
        return [dict(r) for shard in self.shards.existing() for r in shard._db.execute(
            "SELECT m.memory_id, m.tenant_id, m.workspace_id, m.user_id, m.agent_id, m.layer, m.valid_from, "
            "m.lc_pinned, m.lc_compression, (SELECT MAX(at) FROM lifecycle_signals s WHERE s.memory_id = "
            "m.memory_id AND s.kind IN ('cited_by_agent', 'helpful')) AS last_use FROM memories m "
            "WHERE m.superseded_by IS NULL AND m.valid_from IS NOT NULL ORDER BY m.valid_from, m.memory_id")]

    def unverified(self, limit: int) -> list[Row]:
        """Current L2 atoms never verified, or changed since their verdict in what verify reads (a use signal
        or a compression is no such change: verify would find the same verdict, store nothing, and the atom
        would be named on every pass). Not an atom a reviewer judged: verify gives it no verdict; nor one the
        write guard holds for review (its verdict stays until a reviewer decides: named, it was named on every
        pass, and held atoms older than a never-verified one filled the pass)."""
        out: list[Row] = []
        for shard in self.shards.existing():
            out += [dict(r) for r in shard._db.execute(
                "SELECT m.memory_id, m.tenant_id, m.workspace_id, m.user_id, m.agent_id FROM memories m "
                "WHERE m.layer = 'L2' AND m.superseded_by IS NULL AND m.trust_method IS NOT 'ground_truth' "
                f"AND NOT (m.trust_status = 'uncertain' AND COALESCE(substr(m.trust_reason, 1, {len(GUARD_HOLD)}), "
                "'') = ?) "
                "AND (m.trust_verified_at IS NULL OR EXISTS "
                "(SELECT 1 FROM audit_log a WHERE a.target_table = 'memories' AND a.target_id = m.memory_id AND "
                f"a.actor NOT IN ('verify', 'review') AND a.at > m.trust_verified_at AND ({_JUDGED_CHANGE}))) "
                "ORDER BY m.valid_from, m.memory_id LIMIT ?", (GUARD_HOLD, limit - len(out)))]
            if len(out) >= limit:
                break
        return out
