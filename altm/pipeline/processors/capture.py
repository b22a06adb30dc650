"""capture: turns → L0 message proposals, verbatim."""

from __future__ import annotations

from collections.abc import Sequence

from altm.core import (
    Event,
    Kind,
    Layer,
    MemoryUnit,
    Method,
    Proposal,
    Provenance,
    TurnEvent,
    content_hash,
    derive_id,
)
from altm.core.bounds import content_over_limit
from altm.core.errors import ProcessingError
from altm.core.topics import Topic
from altm.pipeline.processors._base import Processor, ProcessorContext, upsert_proposal


def l0_memory_id(event: TurnEvent) -> str:
    """Scope, session, source id and role identify an L0 message (its content may not change: append-only)."""
    return derive_id(
        "mem", event.scope.path, event.session_id, "L0", event.source_id or event.turn_id, event.role.value
    )


class CaptureProcessor(Processor):
    name = "capture"
    input_topic = Topic.TURNS

    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[Proposal]:
        if not isinstance(event, TurnEvent):
            raise ProcessingError(f"the turns topic carries turn events, got {event.event_type!r}")
        if error := content_over_limit(event.content, ctx.settings.max_content_bytes):
            raise ProcessingError(f"turn {event.turn_id!r}: {error}")
        attributes: dict[str, object] = {"turn_id": event.turn_id}
        if event.cycle_id:
            attributes["cycle_id"] = event.cycle_id
        if event.cited_memory_ids:
            attributes["cited_memory_ids"] = list(event.cited_memory_ids)
        if event.metadata:
            attributes["metadata"] = event.metadata
        memory = MemoryUnit(
            memory_id=l0_memory_id(event),
            scope=event.scope,
            session_id=event.session_id,
            layer=Layer.L0,
            kind=Kind.MESSAGE,
            content=event.content,
            content_hash=content_hash(event.content),
            source_id=event.source_id or event.turn_id,
            role=event.role.value,
            attributes=attributes,
            provenance=Provenance(
                method=Method.VERBATIM, processor=self.name, source_event_id=event.event_id
            ),
            valid_from=event.timestamp,
        )
        return [upsert_proposal(memory, processor=self.name, cause=event)]
