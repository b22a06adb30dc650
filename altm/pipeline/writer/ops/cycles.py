"""Runtime cycles (prepare_turn → commit_turn or abort_turn): their state only moves forward."""

from __future__ import annotations

from altm.core import ChangeStatus, RecordCycleProposal
from altm.pipeline.writer.ops._base import Applied, OpContext, Rejection, as_json
from altm.store import ShardTx


def record_cycle(tx: ShardTx, p: RecordCycleProposal, ctx: OpContext) -> Applied:
    """Store a runtime cycle's state. A cycle only moves forward: prepared → committed or aborted."""
    cycle = p.cycle
    if cycle.scope.home != p.scope.home:
        raise Rejection(f"cycle {cycle.cycle_id} belongs to {cycle.scope.home!r}, not {p.scope.home!r}",
                        code="foreign_scope")
    scope = cycle.scope
    row = {
        "cycle_id": cycle.cycle_id, "tenant_id": scope.tenant_id, "workspace_id": scope.workspace_id,
        "user_id": scope.user_id, "agent_id": scope.agent_id, "session_id": cycle.session_id, "turn_id": cycle.turn_id,
        "state": cycle.state.value, "idempotency_key": cycle.idempotency_key, "request_hash": cycle.request_hash,
        "bundle_memory_ids": as_json(list(cycle.bundle_memory_ids)), "bundle": None,
        "token_budget": cycle.token_budget, "commit_hash": cycle.commit_hash,
        "created_at": cycle.created_at.isoformat(),
        "closed_at": cycle.closed_at.isoformat() if cycle.closed_at else None, "abort_reason": cycle.abort_reason,
    }
    old = tx.cycle(cycle.cycle_id)
    if old is not None:
        if old["state"] == row["state"] or row["state"] == "prepared":
            return Applied(ChangeStatus.UNCHANGED)  # a retry, or a prepare replayed after its close
        if old["state"] != "prepared":
            raise Rejection(f"cycle {cycle.cycle_id} is already {old['state']}; it cannot become {row['state']}",
                            code="conflict")
    tx.put_cycle(row, old, at=ctx.now, proposal_id=p.event_id, actor="protocol")
    return Applied(ChangeStatus.COMMITTED)
