"""Recall: hybrid retrieval (word, trigram, vector and graph channels, fusion, priors), search presets as
pydantic configs, and context governance (token-budgeted bundles, compression, markers)."""

from altm.recall._metrics import BUNDLE_TOKENS, PREPARE_SECONDS, TRACER, span
from altm.recall.context import (
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    BundleItem,
    ContentType,
    ContextBundle,
    build_bundle,
    check_budget,
    count_tokens,
    detect,
    marker_for,
)
from altm.recall.context._bundle import share_estimate
from altm.recall.retrieval import (
    CHANNELS,
    DEFAULT_PRESET,
    MAX_QUERY_TERMS,
    PRESETS,
    Emergent,
    Hit,
    Retriever,
    SearchConfig,
    SearchResult,
    preset,
    query_terms,
)

__all__ = [
    "BUNDLE_TOKENS",
    "CHANNELS",
    "DEFAULT_PRESET",
    "MAX_QUERY_TERMS",
    "MAX_TOKEN_BUDGET",
    "MIN_TOKEN_BUDGET",
    "PREPARE_SECONDS",
    "PRESETS",
    "TRACER",
    "BundleItem",
    "ContentType",
    "ContextBundle",
    "Emergent",
    "Hit",
    "Retriever",
    "SearchConfig",
    "SearchResult",
    "build_bundle",
    "check_budget",
    "count_tokens",
    "detect",
    "marker_for",
    "preset",
    "query_terms",
    "share_estimate",
    "span",
]
