"""Trust verdicts (verified, uncertain, contradicted, unverifiable) on stored memories."""

from __future__ import annotations

from altm.core import ChangeStatus, SetTrustProposal, TrustMethod
from altm.pipeline.writer.ops._base import Applied, OpContext, Rejection, target_row
from altm.pipeline.writer.ops.memory import held_by_guard
from altm.store import MemoryRow, ShardTx, comparable, row_to_memory


def set_trust(tx: ShardTx, p: SetTrustProposal, ctx: OpContext) -> Applied:
    """A processor's verdict; a memory the write guard held for review keeps its hold (only a reviewer lifts
    it) unless the verdict is a contradiction, which keeps it in the review queue too. A reviewer's verdict
    (``ground_truth``) stands: only another review or a rollback of it changes it, and no processor may give one."""
    verdict = p.verdict
    trust = verdict.trust
    if trust.method is TrustMethod.GROUND_TRUTH:
        raise Rejection("a ground-truth verdict is a reviewer's: it comes from a review decision, not a "
                        f"{p.processor} proposal", code="invalid")
    old = target_row(tx, p, verdict.memory_id, "verdict target")
    if old["trust_method"] == TrustMethod.GROUND_TRUTH.value:
        return Applied(ChangeStatus.UNCHANGED)
    if held_by_guard(old) and trust.status.value != "contradicted":
        return Applied(ChangeStatus.UNCHANGED)
    new: MemoryRow = {
        **old, "trust_status": trust.status.value, "trust_method": trust.method.value if trust.method else None,
        "trust_confidence": trust.confidence, "trust_reason": trust.reason,
        "trust_contradicting_id": trust.contradicting_id,
    }
    if comparable(new) == comparable(old):
        return Applied(ChangeStatus.UNCHANGED)
    new["trust_verified_at"] = trust.verified_at.isoformat() if trust.verified_at else ctx.now
    tx.update_memory(old, new, at=ctx.now, proposal_id=p.event_id, actor=p.processor)
    return Applied(ChangeStatus.COMMITTED, row_to_memory(new))
