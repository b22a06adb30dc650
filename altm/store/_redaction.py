"""What an erasure may keep of a row: its text fields replaced by their SHA-256."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

_TEXT_FIELDS = ("content", "context", "attributes", "trust_reason", "name", "label", "normalised_text", "compressed",
                "response", "bundle", "inputs", "reason")
"""Fields that may hold memory text: a held action's and a governance decision's inputs and reason quote the
memories they name (a supersede held for review quotes both versions)."""


def redacted(row: Mapping[str, Any], fields: tuple[str, ...] = _TEXT_FIELDS) -> dict[str, Any]:
    """A row whose text ``fields`` are replaced by their SHA-256 (what an erasure may keep)."""
    out = dict(row)
    for f in fields:
        if isinstance(out.get(f), str):
            out[f] = {"redacted_sha256": hashlib.sha256(out[f].encode()).hexdigest()}
    return out


def redact_reason_json(value: str | None) -> str | None:
    """Only the ``trust_reason`` of a JSON object redacted (the SQL function ``redact_reason_json``): a verdict
    that named an erased memory quoted its values there, and nothing else of the row holds them."""
    if value is None:
        return None
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("trust_reason"), str):
        return value
    return orjson.dumps(redacted(obj, ("trust_reason",)), option=orjson.OPT_SORT_KEYS).decode()


def redact_json(value: str | None) -> str | None:
    """:func:`redacted` over a JSON object (the SQL function ``redact_json`` of an open shard)."""
    if value is None:
        return None
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    return orjson.dumps(redacted(obj) if isinstance(obj, dict) else obj, option=orjson.OPT_SORT_KEYS).decode()
