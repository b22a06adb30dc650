"""ALTM — autonomous long-term memory for LLM agents, as an asynchronous streaming pipeline.

The public Python API::

    import altm

    async with altm.open_embedded(altm.Settings(data_dir="altm-data"), background=True) as deployment:
        memory = deployment.app                      # an altm.MemoryApp
        prepared = await memory.prepare_turn(altm.Scope.parse("acme/platform/dana/coder"), "s1", "t1",
                                             "What's our deadline?", token_budget=1500)

The package is layered, each layer importing only those below it: ``core`` → ``store``, ``bus``,
``vectors``, ``models`` → ``pipeline`` → ``recall`` → ``app`` → ``wiring`` → ``interfaces``.
"""

from altm.app import (
    CommittedTurn,
    Drilldown,
    Feedback,
    MemoryApp,
    NotFound,
    PreparedTurn,
    ProtocolError,
    UnknownCycle,
)
from altm.core import (
    ControlEvent,
    Event,
    Layer,
    MemoryUnit,
    Role,
    Scope,
    Settings,
    TurnEvent,
)
from altm.wiring import Deployment, open_deployment, open_embedded, open_read_only, state_hash

__version__ = "0.1.0"

__all__ = [
    "CommittedTurn",
    "ControlEvent",
    "Deployment",
    "Drilldown",
    "Event",
    "Feedback",
    "Layer",
    "MemoryApp",
    "MemoryUnit",
    "NotFound",
    "PreparedTurn",
    "ProtocolError",
    "Role",
    "Scope",
    "Settings",
    "TurnEvent",
    "UnknownCycle",
    "__version__",
    "open_deployment",
    "open_embedded",
    "open_read_only",
    "state_hash",
]
