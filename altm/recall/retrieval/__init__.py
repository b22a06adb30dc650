"""Retrieval: hybrid recall with graph expansion, scope/session policy, search presets."""

from altm.recall.retrieval._config import DEFAULT_PRESET, PRESETS, SearchConfig, preset
from altm.recall.retrieval._engine import (
    CHANNELS,
    MAX_QUERY_TERMS,
    Emergent,
    Hit,
    Retriever,
    SearchResult,
    query_terms,
)
from altm.recall.retrieval._policy import ScopePolicy

__all__ = [
    "CHANNELS",
    "DEFAULT_PRESET",
    "MAX_QUERY_TERMS",
    "PRESETS",
    "Emergent",
    "Hit",
    "Retriever",
    "ScopePolicy",
    "SearchConfig",
    "SearchResult",
    "preset",
    "query_terms",
]
