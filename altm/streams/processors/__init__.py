"""Pure processors (DESIGN §4)."""

from ._base import ProcessingError, Processor, ProcessorContext, upsert_proposal
from .capture import CaptureProcessor, l0_memory_id

__all__ = [
    "CaptureProcessor",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "l0_memory_id",
    "upsert_proposal",
]
