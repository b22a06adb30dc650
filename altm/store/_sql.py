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


CACHE_GET = "SELECT response FROM llm_cache WHERE home=? AND model=? AND prompt_hash=?"
"""An entry of a shard's model cache (model, key)."""
CACHE_PUT = ("INSERT OR IGNORE INTO llm_cache (model, prompt_hash, home, response, recorded_at, sources) "
             "VALUES (?,?,?,?,?,?)")
"""Keep an entry (model, key, home, response, recorded at, sources: a JSON list of the memory ids the prompt
held, or NULL); the first kept stays."""
