"""Pure processors (DESIGN §4): each has a deterministic model-free method and an LLM method."""

from ._base import (
    Deferred,
    ProcessingError,
    Processor,
    ProcessorContext,
    committed_memory,
    derived_memory,
    proposal,
    upsert_proposal,
)
from .capture import CaptureProcessor, l0_memory_id
from .control import ControlProcessor
from .embed import EmbedProcessor
from .extract import ExtractProcessor
from .fold import FoldProcessor
from .govern import GovernProcessor
from .lifecycle import LifecycleProcessor
from .link import LinkProcessor
from .verify import VerifyProcessor


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
