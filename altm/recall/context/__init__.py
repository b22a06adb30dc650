"""Context governance (CCR): token counting, compression by content type, markers and drilldown."""

from altm.recall.context._compress import Compressed, ContentType, compress, detect
from altm.recall.context._tokens import TokenizerError, count_tokens, encoding, truncate_tokens

__all__ = ["Compressed", "ContentType", "TokenizerError", "compress", "count_tokens", "detect", "encoding",
           "truncate_tokens"]

from altm.recall.context._bundle import (
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    BundleItem,
    ContextBundle,
    build_bundle,
    check_budget,
    marker_for,
)

__all__ += ["MAX_TOKEN_BUDGET", "MIN_TOKEN_BUDGET", "BundleItem", "ContextBundle", "build_bundle", "check_budget",
            "marker_for"]
