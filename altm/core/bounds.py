"""Bounds on what a producer may put in an event, checked when the event is read (at ingest, and by every
stage that decodes a record): a value outside them is a validation error, dead-lettered with the reason."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

EARLIEST_YEAR, LATEST_YEAR = 1900, 2499
"""Event times (UTC) outside these years are refused: no conversation happened then, and date arithmetic
near the ends of the calendar overflows."""
MAX_DEPTH = 8
"""Nesting of free-form JSON (turn metadata, control payloads)."""
MAX_METADATA_BYTES = 16 * 1024
MAX_PAYLOAD_BYTES = 64 * 1024
MAX_ID_CHARS = 256
MAX_NAMED_IDS = 500
"""Memory ids one request may name (a reply's citations, a feedback's or a commit's helpful and harmful ids): more
than any bundle shows; a request of 70,000 short ids, under the body limit, had held the event loop for seconds."""
MAX_DEAD_LETTER_ORIGINAL = 256 * 1024
"""A dead letter keeps this much of its original (with the full size and hash beyond it): one 10 MB line
must not be stored twice over."""
SAFE_INTEGER = 2**53 - 1
"""Larger integers lose precision in JavaScript and in every JSON parser that reads numbers as doubles."""


def sane_time(value: datetime) -> datetime:
    if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
        raise ValueError(f"timestamp {value.isoformat()} is outside the years {EARLIEST_YEAR}-{LATEST_YEAR}")
    return value


def _walk(value: Any, depth: int, what: str) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{what} is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        raise ValueError(f"{what} holds the integer {value}, beyond ±2^53-1 (send it as a string)")
    if isinstance(value, dict):
        for item in value.values():
            _walk(item, depth + 1, what)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk(item, depth + 1, what)


def _writable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def bounded_json(value: dict[str, Any], what: str, max_bytes: int) -> dict[str, Any]:
    """Free-form JSON within the depth, integer and size bounds (checked in that order, so the size is only
    measured on what can be serialised)."""
    _walk(value, 1, what)
    try:
        size = len(orjson.dumps(value))
    except orjson.JSONEncodeError as exc:  # a TypeError: it was no validation error, and answered 500
        keys = ", ".join(str(k) for k, v in value.items() if not _writable(v))
        raise ValueError(f"{what}{f' ({keys})' if keys else ''} cannot be written as JSON: {exc} (a lone "
                         "surrogate, \\ud800-\\udfff, is no text: send UTF-8)") from None
    if size > max_bytes:
        raise ValueError(f"{what} is {size} bytes, over the limit of {max_bytes}")
    return value


def content_over_limit(content: str, limit: int) -> str | None:
    """Why ``content`` is refused under ``limit`` bytes (ALTM_MAX_CONTENT_BYTES), or None when it is not."""
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size <= limit:
        return None
    return f"content is {size} bytes, over the limit of {limit} (ALTM_MAX_CONTENT_BYTES)"
