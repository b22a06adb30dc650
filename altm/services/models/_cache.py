"""The LLM response cache, stored in the shard of the scope (keyed by model and prompt hash).

It is a cache, not memory state, so it is written directly rather than through the writer; replays that
reuse a shard answer from it without calling the model, which makes them deterministic and free.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from ..store import Shard


class LLMCache(Protocol):
    def get(self, model: str, prompt_hash: str) -> str | None: ...

    def put(self, model: str, prompt_hash: str, response: str, home: str) -> None: ...


class ShardLLMCache:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    def get(self, model: str, prompt_hash: str) -> str | None:
        row = self.shard.conn.execute(
            "SELECT response FROM llm_cache WHERE model=? AND prompt_hash=?", (model, prompt_hash)
        ).fetchone()
        return None if row is None else str(row[0])

    def put(self, model: str, prompt_hash: str, response: str, home: str) -> None:
        """``home`` records whose content the prompt held, so an erasure can remove the entry."""
        self.shard.conn.execute(
            "INSERT OR IGNORE INTO llm_cache (model, prompt_hash, home, response, recorded_at) VALUES (?,?,?,?,?)",
            (model, prompt_hash, home, response, datetime.now(UTC).isoformat()),
        )


class MemoryLLMCache:
    """In-process cache (tests, tools)."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], str] = {}

    def get(self, model: str, prompt_hash: str) -> str | None:
        return self._data.get((model, prompt_hash))

    def put(self, model: str, prompt_hash: str, response: str, home: str) -> None:
        self._data.setdefault((model, prompt_hash), response)
