"""Pure processors (DESIGN §4): each has a deterministic model-free method and an LLM method."""

from altm.core import ControlEvent
from altm.core.errors import Deferred, ProcessingError
from altm.models import ChatModel, EmbeddingModel
from altm.pipeline.processors._base import (
    BatchFailure,
    Processor,
    ProcessorContext,
    committed_memory,
    derived_memory,
    proposal,
    upsert_proposal,
)
from altm.pipeline.processors.capture import CaptureProcessor, l0_memory_id
from altm.pipeline.processors.control import ControlProcessor, control_proposal
from altm.pipeline.processors.embed import EmbedProcessor
from altm.pipeline.processors.extract import ExtractProcessor
from altm.pipeline.processors.fold import FoldProcessor
from altm.pipeline.processors.govern import GovernProcessor
from altm.pipeline.processors.lifecycle import LifecycleProcessor, lifecycle_proposals
from altm.pipeline.processors.link import LinkProcessor
from altm.pipeline.processors.sweep import SweepProcessor
from altm.pipeline.processors.verify import VerifyProcessor
from altm.vectors import VectorIndex


def control_refusal(event: ControlEvent) -> str | None:
    """Why the control stages (control, lifecycle) cannot apply ``event``, which every worker would
    dead-letter (an erasure of a session that names none, an unknown feedback signal or lifecycle pass); None
    when they can. Input paths ask it before they publish (``altm ingest``/``publish``/``validate``, the host
    SDK), so such a request is refused at the door with its reason."""
    try:
        control_proposal(event)
        lifecycle_proposals(event)
    except (ProcessingError, ValueError, TypeError) as exc:
        return str(exc)
    return None


def default_processors(chat: ChatModel | None = None, embedding: EmbeddingModel | None = None,
                       vectors: VectorIndex | None = None, reuse_vectors: VectorIndex | None = None
                       ) -> list[Processor]:
    """Every processor, in the order the embedded runtime steps them. Each one that can use a model takes
    its model method when ``chat`` serves its task, and its deterministic method otherwise. ``reuse_vectors``:
    an index (a replay's source) whose vectors embed takes for memories of the same id and content."""
    verify = VerifyProcessor(chat)
    return [
        CaptureProcessor(), ControlProcessor(), FoldProcessor(chat), ExtractProcessor(chat), LinkProcessor(chat),
        verify, GovernProcessor(chat), LifecycleProcessor(), SweepProcessor(verify),
        EmbedProcessor(embedding, vectors, reuse_vectors),
    ]


__all__ = [
    "BatchFailure",
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
    "SweepProcessor",
    "VerifyProcessor",
    "committed_memory",
    "control_proposal",
    "control_refusal",
    "default_processors",
    "derived_memory",
    "l0_memory_id",
    "proposal",
    "upsert_proposal",
]
