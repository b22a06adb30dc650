"""control: operator and user decisions on the control topic → proposals for the writer.

Erasure requests become ``erase`` proposals (applied, audited and tombstoned by the writer). Feedback, pin
and unpin signals are consumed by the lifecycle processor; they are not memory-state changes here.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from ...schemas import ControlAction, ControlEvent, Erasure, Event, ProposalEvent, ProposalOp, describe_validation_error
from ..topics import Topic
from ._base import ProcessingError, Processor, ProcessorContext, proposal


class ControlProcessor(Processor):
    name = "control"
    input_topic = Topic.CONTROL

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[ProposalEvent]:
        if not isinstance(event, ControlEvent):
            raise ProcessingError(f"the control topic carries control events, got {event.event_type!r}")
        if event.action is not ControlAction.ERASE:
            return []
        try:
            erasure = Erasure.model_validate(event.payload)
        except ValidationError as exc:
            raise ProcessingError(f"invalid erase request: {describe_validation_error(exc)}") from None
        return [proposal(ProposalOp.ERASE, scope=event.scope, processor=self.name, cause=event, erasure=erasure)]
