"""control: operator and user decisions on the control topic → proposals for the writer.

Erasure requests become ``erase`` proposals (applied, audited and tombstoned by the writer) and review
decisions ``review`` proposals. Feedback, pin and unpin signals are for the lifecycle processor.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from altm.core import (
    ControlAction,
    ControlEvent,
    Erasure,
    Event,
    ProposalEvent,
    ProposalOp,
    ReviewDecision,
    Rollback,
    describe_validation_error,
)
from altm.core.errors import ProcessingError
from altm.core.topics import Topic
from altm.pipeline.processors._base import Processor, ProcessorContext, proposal


class ControlProcessor(Processor):
    name = "control"
    input_topic = Topic.CONTROL

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[ProposalEvent]:
        if not isinstance(event, ControlEvent):
            raise ProcessingError(f"the control topic carries control events, got {event.event_type!r}")
        try:
            if event.action is ControlAction.ERASE:
                erasure = Erasure.model_validate(event.payload)
                return [proposal(ProposalOp.ERASE, scope=event.scope, processor=self.name, cause=event,
                                 erasure=erasure)]
            if event.action is ControlAction.ROLLBACK:
                rollback = Rollback.model_validate(event.payload)
                return [proposal(ProposalOp.ROLLBACK, scope=event.scope, processor=self.name, cause=event,
                                 rollback=rollback)]
            if event.action is ControlAction.REVIEW_DECISION:
                review = ReviewDecision.model_validate(event.payload)
                return [proposal(ProposalOp.REVIEW, scope=event.scope, processor=self.name, cause=event,
                                 review=review)]
        except ValidationError as exc:
            raise ProcessingError(f"invalid {event.action.value} request: {describe_validation_error(exc)}") from None
        return []
