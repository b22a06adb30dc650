"""control: operator and user decisions on the control topic → proposals for the writer.

Erasure requests become ``erase`` proposals (applied, audited and tombstoned by the writer), review
decisions ``review`` proposals, rollbacks ``rollback`` proposals and runtime cycles ``record_cycle``
proposals. Feedback, pin and unpin signals are for the lifecycle processor, sweeps for the sweep processor.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from altm.core import (
    ControlAction,
    ControlEvent,
    EraseProposal,
    Erasure,
    Event,
    ProcessingError,
    Proposal,
    RecordCycleProposal,
    ReviewDecision,
    ReviewProposal,
    Rollback,
    RollbackProposal,
    RuntimeCycle,
    Topic,
    derive_id,
    describe_validation_error,
)
from altm.pipeline.processors._base import Processor, ProcessorContext, proposal

_PAYLOADS: dict[ControlAction, tuple[type[Proposal], str, type[BaseModel]]] = {
    ControlAction.ERASE: (EraseProposal, "erasure", Erasure),
    ControlAction.ROLLBACK: (RollbackProposal, "rollback", Rollback),
    ControlAction.REVIEW_DECISION: (ReviewProposal, "review", ReviewDecision),
    ControlAction.CYCLE: (RecordCycleProposal, "cycle", RuntimeCycle),
}


def control_proposal(event: ControlEvent) -> Proposal | None:
    """The writer proposal a control event asks for (None for signals, which the lifecycle handles).

    Pure and deterministic: the admin service computes the same proposal id to read the outcome back."""
    spec = _PAYLOADS.get(event.action)
    if spec is None:
        return None
    kind, field, model = spec
    try:
        value = model.model_validate(event.payload)
    except ValidationError as exc:
        raise ProcessingError(f"invalid {event.action.value} request: {describe_validation_error(exc)}") from None
    made = proposal(kind, scope=event.scope, processor=ControlProcessor.name, cause=event, **{field: value})
    # named by the request too: a payload need not name its scope (an erasure of an agent names neither the
    # agent nor the time), and two requests alike are two proposals (the same request sent again is one)
    return made.model_copy(update={"event_id": derive_id("prop", made.event_id, event.scope.path, event.event_id)})


class ControlProcessor(Processor):
    name = "control"
    input_topic = Topic.CONTROL

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        if not isinstance(event, ControlEvent):
            raise ProcessingError(f"the control topic carries control events, got {event.event_type!r}")
        found = control_proposal(event)
        return [] if found is None else [found]
