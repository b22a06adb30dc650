"""The runtime protocol and the application object (Python API)."""

from altm.app.protocol._app import (
    CommittedTurn,
    Drilldown,
    Emergent,
    Feedback,
    MemoryApp,
    PreparedTurn,
    Publisher,
)
from altm.app.protocol._errors import (
    BadMarker,
    CitationError,
    CycleStateError,
    IdempotencyConflict,
    NotFound,
    ProtocolError,
    ScopeDenied,
    UnknownCycle,
)

__all__ = ["BadMarker", "CitationError", "CommittedTurn", "CycleStateError", "Drilldown", "Emergent", "Feedback",
           "IdempotencyConflict", "MemoryApp", "NotFound", "PreparedTurn", "ProtocolError", "Publisher",
           "ScopeDenied", "UnknownCycle"]
