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


_FORMAT = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
                     "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                     "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")
"""Unicode's format characters (category Cf): soft hyphen, zero-width space and joiners, word joiner, bidi marks,
embeddings and isolates, the byte order mark, tags. Invisible, they say nothing; kept, one inside a word made
it two ("44\u206017" was "44" and "17", and erased content came back past the write guard)."""


APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\uff07": "'"})
"""The typographic apostrophe (what phones and most editors type: "don’t"), the modifier letter and the fullwidth
one, as the plain ``'`` rules are written with (``str.translate``); one character for one, so a match's spans
in the translated text are the original's."""


def strip_format(text: str) -> str:
    """``text`` without Unicode's format characters (see :data:`_FORMAT`), as :func:`normalise_text` reads it."""
    return text if text.isascii() else _FORMAT.sub("", text)


def normalise_text(text: str) -> str:
    """NFKC, casefolded, format characters removed, whitespace collapsed: the form used for identity and
    matching."""
    return _WS.sub(" ", strip_format(unicodedata.normalize("NFKC", text).casefold())).strip()


_DIGITS = re.compile(r"\d+")


def natural_key(text: str | None) -> str:
    """``text`` with each run of digits written as its length and its value (leading zeros dropped), so that
    comparing the results as text compares the numbers as numbers: "s1-2" before "s1-10" (turn ids)."""
    def number(m: re.Match[str]) -> str:
        digits = m.group().lstrip("0") or "0"
        return f"{len(digits):04d}{digits}"
    return _DIGITS.sub(number, text or "")


def derive_id(prefix: str, *parts: str) -> str:
    """A short stable id ``<prefix>_<32 hex>`` from ordered parts (joined unambiguously)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{prefix}_{digest[:32]}"


def event_ref(event_id: str) -> str:
    """What a retention pass's tombstones and its record's clear header (``altm-event-ref``) name it by: a hash
    of its control event's id, which a host may have chosen (and which may say what it is about)."""
    return derive_id("ref", event_id)
