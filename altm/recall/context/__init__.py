"""Context governance (CCR): token counting, compression by content type, markers and drilldown."""

from altm.recall.context._compress import Compressed, ContentType, compress, detect
from altm.recall.context._tokens import TokenizerError, count_tokens, encoding, truncate_tokens

__all__ = ["Compressed", "ContentType", "TokenizerError", "compress", "count_tokens", "detect", "encoding",
           "truncate_tokens"]

from altm.recall.context._bundle import BundleItem, ContextBundle, build_bundle, marker_for

__all__ += ["BundleItem", "ContextBundle", "build_bundle", "marker_for"]
