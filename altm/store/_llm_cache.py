"""The LLM response cache in the shard of the scope (keyed by the user, model and prompt hash).

It is a cache, not memory state, so it is written directly rather than through the writer; replays that
reuse a shard answer from it without calling the model, which makes them deterministic and free. It
satisfies :class:`altm.models.LLMCache` structurally.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import orjson

from altm.store._shard import Shard
from altm.store._sql import CACHE_GET, CACHE_PUT


class ShardLLMCache:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    def get(self, model: str, prompt_hash: str, home: str) -> str | None:
        """The answer cached for ``home``'s prompt (another user's answer to the same prompt is not theirs)."""
        row = self.shard._db.execute(CACHE_GET, (home, model, prompt_hash)).fetchone()
        return None if row is None else str(row[0])

    def put_many(self, rows: list[tuple[str, str, str, str, str, str | None]]) -> None:
        """Copy cached answers (model, prompt hash, home, response, recorded at, sources), e.g. into a replay."""
        self.shard._db.executemany(CACHE_PUT, rows)

    def erasures(self, home: str) -> object:
        """How many of the user's tombstones are an erasure's, and the latest one's time (an erasure that takes
        a tombstone over changes it): what an erasure of ``home`` since changes."""
        tenant, workspace, user = home.split("/", 2)
        return tuple(self.shard._db.execute(
            "SELECT COUNT(*), MAX(at) FROM tombstones WHERE tenant_id=? AND workspace_id=? AND user_id=? "
            "AND reason NOT LIKE 'forgotten: %'", (tenant, workspace, user)).fetchone())

    def put(self, model: str, prompt_hash: str, response: str, home: str, *, since: object = None,
            sources: Sequence[str] | None = None) -> None:
        """``home`` records whose content the prompt held and ``sources`` the memories (None: not known), so an
        erasure of one of them (of any memory of ``home``, when not known) removes the entry; ``since``: the
        marker of :meth:`erasures` taken before the call (an answer that arrives after an erasure of the user
        is not kept: the erasure cleared the entries of the user and the answer may quote what it erased). A
        process that opened the shard read-only (a Kafka client beside the workers) keeps nothing: it is only
        a cache."""
        if self.shard.read_only or (since is not None and self.erasures(home) != since):
            return
        listed = None if sources is None else orjson.dumps(sorted(set(sources))).decode()
        self.shard._db.execute(CACHE_PUT, (model, prompt_hash, home, response, datetime.now(UTC).isoformat(),
                                           listed))
