"""Runtime cycles, persisted in the shard of their scope (protocol bookkeeping, not memory state)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from altm.app.protocol._errors import UnknownCycle
from altm.core import CycleState, RuntimeCycle, Scope
from altm.core.partitioner import partition_for
from altm.store import ShardSet


class CycleStore:
    def __init__(self, shards: ShardSet) -> None:
        self.shards = shards

    def _conn_for(self, scope: Scope) -> Any:
        return self.shards.get(partition_for(scope.home, self.shards.partitions)).conn

    def find(self, cycle_id: str) -> tuple[RuntimeCycle, dict[str, Any]]:
        for p in range(self.shards.partitions):
            shard = self.shards.get(p)
            row = shard.conn.execute("SELECT * FROM runtime_cycles WHERE cycle_id=?", (cycle_id,)).fetchone()
            if row is not None:
                r = dict(row)
                return self._cycle(r), r
        raise UnknownCycle(f"unknown cycle {cycle_id!r}: prepare_turn returns the cycle id to commit or abort")

    def get(self, scope: Scope, cycle_id: str) -> tuple[RuntimeCycle, dict[str, Any]] | None:
        row = self._conn_for(scope).execute("SELECT * FROM runtime_cycles WHERE cycle_id=?", (cycle_id,)).fetchone()
        return None if row is None else (self._cycle(dict(row)), dict(row))

    @staticmethod
    def _cycle(r: dict[str, Any]) -> RuntimeCycle:
        return RuntimeCycle(
            cycle_id=r["cycle_id"],
            scope=Scope(tenant_id=r["tenant_id"], workspace_id=r["workspace_id"], user_id=r["user_id"],
                        agent_id=r["agent_id"]),
            session_id=r["session_id"], turn_id=r["turn_id"], state=r["state"],
            idempotency_key=r["idempotency_key"], request_hash=r["request_hash"],
            bundle_memory_ids=tuple(orjson.loads(r["bundle_memory_ids"])), token_budget=r["token_budget"],
            created_at=r["created_at"], closed_at=r["closed_at"], abort_reason=r["abort_reason"],
        )

    def create(self, cycle: RuntimeCycle, bundle_json: str) -> None:
        s = cycle.scope
        self._conn_for(s).execute(
            "INSERT INTO runtime_cycles (cycle_id, tenant_id, workspace_id, user_id, agent_id, session_id, turn_id, "
            "state, idempotency_key, request_hash, bundle_memory_ids, bundle, token_budget, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (cycle.cycle_id, s.tenant_id, s.workspace_id, s.user_id, s.agent_id, cycle.session_id, cycle.turn_id,
             cycle.state.value, cycle.idempotency_key, cycle.request_hash,
             orjson.dumps(list(cycle.bundle_memory_ids)).decode(), bundle_json, cycle.token_budget,
             cycle.created_at.isoformat()),
        )

    def close(self, cycle: RuntimeCycle, state: CycleState, *, commit_hash: str | None = None,
              abort_reason: str | None = None) -> None:
        self._conn_for(cycle.scope).execute(
            "UPDATE runtime_cycles SET state=?, commit_hash=?, abort_reason=?, closed_at=? WHERE cycle_id=? "
            "AND state='prepared'",
            (state.value, commit_hash, abort_reason, datetime.now(UTC).isoformat(), cycle.cycle_id),
        )
