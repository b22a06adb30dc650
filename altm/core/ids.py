"""Deterministic identity (DESIGN principle 5): the same inputs always give the same id."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def content_hash(content: str) -> str:
    """Hash of the exact content; used in CCR markers ``memory://<id>#<content_hash>``."""
    return sha256_hex(content)


def normalise_text(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: the form used for identity and matching."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def derive_id(prefix: str, *parts: str) -> str:
    """A short stable id ``<prefix>_<32 hex>`` from ordered parts (joined unambiguously)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{prefix}_{digest[:32]}"


def event_ref(event_id: str) -> str:
    """What a retention pass's tombstones and its record's clear header (``altm-event-ref``) name it by: a hash
    of its control event's id, which a host may have chosen (and which may say what it is about)."""
    return derive_id("ref", event_id)
