"""The writer's ops, one module per family; :func:`apply_op` picks the one a proposal names.

Each op is ``(tx, proposal, ctx) -> Applied``: it validates (raising :class:`Rejection` to refuse), then
mutates through the shard transaction, whose every mutation writes its audit row first.
"""

from __future__ import annotations

from typing import assert_never

from altm.core import (
    BuryProposal,
    EraseProposal,
    ForgetProposal,
    HoldActionProposal,
    LinkMemoryProposal,
    MergeProposal,
    ProposalEvent,
    RecordCycleProposal,
    ReviewProposal,
    RollbackProposal,
    SetTrustProposal,
    SignalProposal,
    SupersedeProposal,
    UpsertEdgeProposal,
    UpsertMemoryProposal,
    UpsertNodeProposal,
)
from altm.pipeline.writer.ops._base import Applied, Erased, OpContext, Rejection
from altm.pipeline.writer.ops.burial import carry_burial
from altm.pipeline.writer.ops.cycles import record_cycle
from altm.pipeline.writer.ops.erasure import erase
from altm.pipeline.writer.ops.governance import hold_action, merge, review, rollback, supersede
from altm.pipeline.writer.ops.graph import link_memory, upsert_edge, upsert_node
from altm.pipeline.writer.ops.lifecycle import forget, signal
from altm.pipeline.writer.ops.memory import upsert_memory
from altm.pipeline.writer.ops.trust import set_trust
from altm.store import ShardTx

__all__ = ["Applied", "Erased", "OpContext", "Rejection", "apply_op"]


def apply_op(tx: ShardTx, p: ProposalEvent, ctx: OpContext) -> Applied:  # noqa: C901 - one flat case per op
    match p:
        case UpsertMemoryProposal():
            return upsert_memory(tx, p, ctx)
        case UpsertNodeProposal():
            return upsert_node(tx, p, ctx)
        case UpsertEdgeProposal():
            return upsert_edge(tx, p, ctx)
        case LinkMemoryProposal():
            return link_memory(tx, p, ctx)
        case SetTrustProposal():
            return set_trust(tx, p, ctx)
        case SupersedeProposal():
            return supersede(tx, p, ctx)
        case MergeProposal():
            return merge(tx, p, ctx)
        case HoldActionProposal():
            return hold_action(tx, p, ctx)
        case EraseProposal():
            return erase(tx, p, ctx)
        case ReviewProposal():
            return review(tx, p, ctx)
        case SignalProposal():
            return signal(tx, p, ctx)
        case ForgetProposal():
            return forget(tx, p, ctx)
        case RollbackProposal():
            return rollback(tx, p, ctx)
        case RecordCycleProposal():
            return record_cycle(tx, p, ctx)
        case BuryProposal():
            return carry_burial(tx, p, ctx)
        case _:
            assert_never(p)
