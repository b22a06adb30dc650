"""Context governance (CCR): token counting, compression by content type, markers and drilldown."""

from ._compress import Compressed, ContentType, compress, detect
from ._tokens import TokenizerError, count_tokens, encoding, truncate_tokens

__all__ = ["Compressed", "ContentType", "TokenizerError", "compress", "count_tokens", "detect", "encoding",
           "truncate_tokens"]

from ._bundle import BundleItem, ContextBundle, build_bundle, marker_for

__all__ += ["BundleItem", "ContextBundle", "build_bundle", "marker_for"]
