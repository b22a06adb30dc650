"""The LLM response cache, stored in the shard of the scope (keyed by the user, model and prompt hash).

The shard-backed cache lives in :mod:`altm.store` (it is a table of the shard); this module holds the
interface the model clients need and an in-process cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class LLMCache(Protocol):
    def get(self, model: str, prompt_hash: str, home: str) -> str | None:
        """The answer cached for the user ``home``'s prompt: one user's prompt is never answered from another's
        entry (a hit would tell that someone else sent the same text)."""
        ...

    def erasures(self, home: str) -> object:
        """A marker of the user's erasures so far, taken before a model call: an answer that comes back after an
        erasure of that user (which cleared the user's entries) is not kept (it may quote what was erased)."""
        ...

    def put(self, model: str, prompt_hash: str, response: str, home: str, *, since: object = None,
            sources: Sequence[str] | None = None) -> None: ...


class MemoryLLMCache:
    """In-process cache (tests, tools)."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str, str], str] = {}

    def get(self, model: str, prompt_hash: str, home: str) -> str | None:
        return self._data.get((home, model, prompt_hash))

    def erasures(self, home: str) -> object:
        return None  # nothing here is erased

    def put(self, model: str, prompt_hash: str, response: str, home: str, *, since: object = None,
            sources: Sequence[str] | None = None) -> None:
        self._data.setdefault((home, model, prompt_hash), response)
