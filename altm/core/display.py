"""Text as an operator or a model is shown it: what would make it show other than it says made visible."""

from __future__ import annotations

import re

INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060-\u2069\ufeff]")
"""Control characters (terminal escapes, backspace, bell), bidi embeddings, overrides and isolates, the zero-width
space and word joiners: what makes rendered text show other than it says (an escape sequence rewrote the line
above on a terminal). The joiners an emoji sequence or a Persian or Indic word needs (U+200C, U+200D) and the
directional marks of right-to-left text (U+200E, U+200F, U+061C) stay."""


def visible(text: str) -> str:
    """``text`` with each invisible or reordering character (:data:`INVISIBLE`) written as ``[U+XXXX]``; tabs and
    line breaks stay."""
    return INVISIBLE.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
