"""Small helpers for the SQL the store builds: placeholders, and ids split to fit one statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

_T = TypeVar("_T")


def marks(values: Sequence[object]) -> str:
    """One ``?`` per value, comma-separated."""
    return ", ".join("?" for _ in values)


def chunks(ids: Sequence[_T], size: int = 400) -> list[list[_T]]:
    """``ids`` in lists of at most ``size`` (SQLite bounds the parameters of one statement; small statements
    also keep a long erasure's steps short)."""
    return [list(ids[start:start + size]) for start in range(0, len(ids), size)]
