"""The read side of the application: recall, emergence, listings, the review queue and governance events.

Every read is scoped: a memory outside the caller's visibility answers exactly like one that does not
exist, so ids (deterministic by design) cannot be probed across scopes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from altm.app._errors import NotFound
from altm.app._inspection import Inspection, MemoryInspector
from altm.core import Scope
from altm.recall import DEFAULT_PRESET, Emergent, Hit, Retriever, SearchConfig, SearchResult, preset
from altm.store import GovernanceQueries, MemoryQueries, MemoryRow, ReviewQueries, ShardSet

MAX_QUERY_CHARS = 65_536
MAX_REASON_CHARS = 2000
"""An abort's reason, as an erasure's reason and a review's note (``altm.core.governance``)."""
MAX_LISTED = 500
"""The most items one page of a listing (the review queue) holds."""
MAX_EMERGE_SEEDS = 50
"""Emergence recalls four candidates a seed: 200, recall's largest ``top_k`` over HTTP."""
MAX_EMERGE_HOPS = 4
MAX_EMERGED = 200
"""The longest query text recall takes (a turn's content is at most ``ALTM_MAX_CONTENT_BYTES``, 64 KiB by default,
and a turn is the longest query ``prepare_turn`` makes)."""


class RecallService:
    def __init__(self, shards: ShardSet, retriever: Retriever) -> None:
        self.retriever = retriever
        self._memories = MemoryQueries(shards)
        self._review = ReviewQueries(shards)
        self._governance = GovernanceQueries(shards)
        self._inspector = MemoryInspector(shards)

    def search(self, scope: Scope, session_id: str | None, text: str, *, preset_name: str = DEFAULT_PRESET,
               top_k: int | None = None, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        """Recall. ``as_of``: what was valid in the world at that time (superseded versions included);
        ``known_at``: what the store believed at that time. Default: valid and believed now."""
        if len(text) > MAX_QUERY_CHARS:  # refused before any work: one such query held the server for seconds
            raise ValueError(f"a query of {len(text)} characters is over the limit of {MAX_QUERY_CHARS}")
        config: SearchConfig = preset(preset_name)
        if top_k is not None:
            config = config.model_copy(update={"top_k": top_k})
        return self.retriever.search(scope, session_id, text, config, strict_session=strict_session,
                                     as_of=as_of, known_at=known_at)

    def emerge(self, scope: Scope, query: str, *, session_id: str | None = None, seed_limit: int = 5,
               max_hops: int = 2, limit: int = 10) -> list[Emergent]:
        _within("seed_limit", seed_limit, MAX_EMERGE_SEEDS)
        _within("max_hops", max_hops, MAX_EMERGE_HOPS)
        _within("limit", limit, MAX_EMERGED)
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"a query of {len(query)} characters is over the limit of {MAX_QUERY_CHARS}")
        return self.retriever.emerge(scope, query, session_id=session_id, seed_limit=seed_limit, max_hops=max_hops,
                                     limit=limit)

    def hits_for(self, scope: Scope, session_id: str | None, memory_ids: Sequence[str]) -> list[Hit]:
        return self.retriever.hits_for(scope, session_id, memory_ids)

    def memory(self, scope: Scope, memory_id: str) -> MemoryRow:
        """A memory the scope may see; :class:`NotFound` otherwise (unknown and foreign ids alike)."""
        row = self._memories.visible(scope, memory_id)
        if row is None:
            raise NotFound(f"no memory {memory_id} in scope {scope.path}")
        return row

    def buried(self, scope: Scope, memory_id: str) -> bool:
        """The memory was erased (or forgotten with a tombstone) in ``scope``'s user: its id is spent."""
        return self._memories.buried(scope, memory_id)

    def list_memories(self, scope: Scope | None, *, session_id: str | None = None, layer: str | None = None,
                      kind: str | None = None, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Memories visible to ``scope`` (the recall policy; every session when none is given), oldest first.
        With no scope: every memory of the data dir (the operator's CLI view)."""
        return self._memories.listing(scope, session_id=session_id, layer=layer, kind=kind, limit=limit,
                                      offset=offset)

    def review_queue(self, scope: Scope, *, limit: int = 50) -> dict[str, Any]:
        """Contradicted or uncertain memories, held actions and rejected proposals of the user."""
        _within("limit", limit, MAX_LISTED)
        return dict(self._review.queue(scope, limit=limit))

    def governance_events(self, scope: Scope, *, limit: int = 200) -> list[dict[str, Any]]:
        return self._governance.events(scope, limit=limit)

    def governance_decision(self, scope: Scope, decision_id: str) -> list[dict[str, Any]]:
        """Every step of one decision of the scope's user; :class:`NotFound` when it has none."""
        steps = self._governance.decision(scope, decision_id)
        if not steps:
            raise NotFound(f"no governance decision {decision_id} in scope {scope.home}")
        return steps

    def decision_names(self, scope: Scope, decision_id: str) -> tuple[str, ...]:
        """The memories one decision's record names (none when this reader has no record of it)."""
        return self._governance.names(scope, decision_id)

    def decision_signal(self, scope: Scope, decision_id: str) -> str | None:
        """The use signal one promotion or demotion was made on (None for other decisions)."""
        return self._governance.signal(scope, decision_id)

    def inspect(self, scope: Scope, memory_id: str) -> Inspection:
        """A memory with its evidence chain, derived memories, graph neighbourhood and audit history."""
        return self._inspector.inspect(scope, memory_id)

    def scopes_under(self, prefix: list[str]) -> list[str]:
        """The agent scopes with memories under a key's prefix."""
        return self._inspector.scopes_under(prefix)

    def erasure_reach(self, scope: Scope, target: str, *, memory_id: str | None = None,
                      session_id: str | None = None) -> list[dict[str, Any]]:
        """Every memory an erasure of ``target`` would remove (what it names and what was derived from it)."""
        return self._inspector.erasure_reach(scope, target, memory_id=memory_id, session_id=session_id)


def _within(name: str, value: int, most: int) -> None:
    """A count a caller chose is 1..``most`` (SQLite reads a negative LIMIT as none, a slice drops from the end)."""
    if not 1 <= value <= most:
        raise ValueError(f"{name} is 1 to {most}, not {value}")
