"""sweep: a trust sweep on the control topic (``sweep`` with the memories to verify) → trust verdicts.

The sweep is decided by the admin service (which atoms were never verified, or changed since their
verdict) and put on the log, so a replay repeats it; this processor verifies each named atom as the verify
processor does when the atom is committed.
"""

from __future__ import annotations

from collections.abc import Sequence

from altm.core import (
    ChangeEvent,
    ChangeStatus,
    ControlAction,
    ControlEvent,
    Event,
    ProcessingError,
    Proposal,
    ProposalOp,
    Topic,
    derive_id,
)
from altm.pipeline.processors._base import Processor, ProcessorContext
from altm.pipeline.processors.verify import VerifyProcessor


class SweepProcessor(Processor):
    name = "sweep"
    input_topic = Topic.CONTROL

    def __init__(self, verify: VerifyProcessor | None = None) -> None:
        self.verify = verify or VerifyProcessor()

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        if not isinstance(event, ControlEvent):
            raise ProcessingError(f"the control topic carries control events, got {event.event_type!r}")
        if event.action is not ControlAction.SWEEP:
            return []
        reader = ctx.require_reader()
        out: list[Proposal] = []
        for memory_id in event.target_ids:
            mem = reader.get(event.scope, memory_id)
            if mem is None:
                continue  # erased or forgotten since the sweep was decided
            change = ChangeEvent(
                event_id=derive_id("sweep", mem.memory_id, mem.content_hash), scope=mem.scope,
                timestamp=mem.valid_from or event.timestamp, proposal_id="sweep", op=ProposalOp.UPSERT_MEMORY,
                status=ChangeStatus.COMMITTED, memory_id=mem.memory_id, layer=mem.layer, kind=mem.kind, memory=mem)
            out += await self.verify.process(change, ctx)
        return out
