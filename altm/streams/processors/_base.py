"""Processors are pure: ``async (event, context) -> list[proposal]`` over pydantic models (DESIGN §1.3).

No broker, runtime or vendor SDK is imported here; the context gives read access to stores and settings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ...config import Settings
from ...schemas import Event, MemoryUnit, ProposalEvent, ProposalOp, derive_id
from ..topics import Topic


class ProcessingError(Exception):
    """The event cannot be processed (e.g. over a configured limit); it goes to the DLQ with this reason."""


@dataclass(frozen=True)
class ProcessorContext:
    settings: Settings


class Processor(ABC):
    name: ClassVar[str]
    input_topic: ClassVar[Topic]

    @abstractmethod
    async def process(self, event: Event, ctx: ProcessorContext) -> Sequence[ProposalEvent]: ...


def upsert_proposal(memory: MemoryUnit, *, processor: str, cause: Event) -> ProposalEvent:
    """A proposal with a deterministic id, timestamped with its cause (never the wall clock)."""
    return ProposalEvent(
        event_id=derive_id("prop", processor, memory.memory_id, memory.content_hash),
        scope=memory.scope,
        timestamp=cause.timestamp,
        op=ProposalOp.UPSERT_MEMORY,
        processor=processor,
        cause_event_id=cause.event_id,
        memory=memory,
    )
