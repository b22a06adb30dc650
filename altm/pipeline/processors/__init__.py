"""Pure processors (DESIGN §4): each has a deterministic model-free method and an LLM method."""

from altm.core.errors import Deferred, ProcessingError
from altm.pipeline.processors._base import (
    Processor,
    ProcessorContext,
    committed_memory,
    derived_memory,
    proposal,
    upsert_proposal,
)
from altm.pipeline.processors.capture import CaptureProcessor, l0_memory_id
from altm.pipeline.processors.control import ControlProcessor
from altm.pipeline.processors.embed import EmbedProcessor
from altm.pipeline.processors.extract import ExtractProcessor
from altm.pipeline.processors.fold import FoldProcessor
from altm.pipeline.processors.govern import GovernProcessor
from altm.pipeline.processors.lifecycle import LifecycleProcessor
from altm.pipeline.processors.link import LinkProcessor
from altm.pipeline.processors.verify import VerifyProcessor


def default_processors() -> list[Processor]:
    """Every processor, in the order the embedded runtime steps them."""
    return [
        CaptureProcessor(), ControlProcessor(), FoldProcessor(), ExtractProcessor(), LinkProcessor(),
        VerifyProcessor(), GovernProcessor(), LifecycleProcessor(), EmbedProcessor(),
    ]


__all__ = [
    "CaptureProcessor",
    "ControlProcessor",
    "Deferred",
    "EmbedProcessor",
    "ExtractProcessor",
    "FoldProcessor",
    "GovernProcessor",
    "LifecycleProcessor",
    "LinkProcessor",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "VerifyProcessor",
    "committed_memory",
    "default_processors",
    "derived_memory",
    "l0_memory_id",
    "proposal",
    "upsert_proposal",
]
