"""The application: the runtime protocol, recall and administration services behind :class:`MemoryApp`,
plus ingestion, replay and statistics over a deployment."""

from altm.app._admin import AdminService, Request
from altm.app._cycles import CycleBook, unknown_cycle
from altm.app._errors import (
    BadMarker,
    CitationError,
    CycleStateError,
    IdempotencyConflict,
    NotFound,
    ProtocolError,
    ScopeDenied,
    ShuttingDown,
    UnknownCycle,
)
from altm.app._facade import MemoryApp
from altm.app._inspection import AuditStep, ChainLink, GraphLine, GraphPoint, Inspection
from altm.app._protocol import (
    CommittedTurn,
    Drilldown,
    Feedback,
    PreparedTurn,
    ProtocolService,
    Publisher,
)
from altm.app._recall import (
    MAX_EMERGE_HOPS,
    MAX_EMERGE_SEEDS,
    MAX_EMERGED,
    MAX_LISTED,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    RecallService,
)
from altm.recall import Emergent

__all__ = [
    "MAX_EMERGED",
    "MAX_EMERGE_HOPS",
    "MAX_EMERGE_SEEDS",
    "MAX_LISTED",
    "MAX_QUERY_CHARS",
    "MAX_REASON_CHARS",
    "AdminService",
    "AuditStep",
    "BadMarker",
    "ChainLink",
    "CitationError",
    "CommittedTurn",
    "CycleBook",
    "CycleStateError",
    "Drilldown",
    "Emergent",
    "Feedback",
    "GraphLine",
    "GraphPoint",
    "IdempotencyConflict",
    "Inspection",
    "MemoryApp",
    "NotFound",
    "PreparedTurn",
    "ProtocolError",
    "ProtocolService",
    "Publisher",
    "RecallService",
    "Request",
    "ScopeDenied",
    "ShuttingDown",
    "UnknownCycle",
    "unknown_cycle",
]
