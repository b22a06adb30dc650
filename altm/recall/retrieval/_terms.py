"""Term statistics for the word channel: document frequencies per shard, cached for a while.

FTS5 scores every document that matches any query term, so one very common term ("deploy" in an ops
team's memories, a speaker's name in a chat log) makes bm25 run over a large share of the user's
memories while adding little to the ranking (its IDF is near zero). Terms found in more than ``max_df``
of the memories an agent may see (its own and its user's persona) are left out of the word query, as long as
``min_terms`` rarer ones remain (another tenant in the shard, or a sibling agent of the user, must not change
what an agent recalls).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from altm.core import Scope


class TermCounts(Protocol):
    """Document counts of one user's memories in a shard (``altm.store.SearchQueries`` answers them)."""

    @property
    def partition(self) -> int: ...

    def document_count(self, scope: Scope) -> int: ...

    def term_frequency(self, term: str, scope: Scope) -> int: ...


def _whose(scope: Scope) -> str:
    """Whose counts: an agent's (its memories and its user's persona: what it may see)."""
    return f"{scope.home}\x1f{scope.agent_id}"


class TermStatistics:
    """Per-agent document frequencies with a time-to-live; stale counts only shift what is pruned."""

    def __init__(self, ttl_s: float = 300.0, max_entries: int = 100_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()  # recalls run on several threads at once

    def _cached(self, key: tuple[str, str]) -> int | None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None or time.monotonic() - entry[1] > self.ttl_s:
                return None
            self._cache.move_to_end(key)
            return entry[0]

    def _store(self, key: tuple[str, str], value: int) -> int:
        with self._lock:
            self._cache[key] = (value, time.monotonic())
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return value

    def documents(self, counts: TermCounts, scope: Scope) -> int:
        key = (_whose(scope), "\x00documents")
        cached = self._cached(key)
        if cached is not None:
            return cached
        return self._store(key, counts.document_count(scope))

    def frequency(self, counts: TermCounts, term: str, scope: Scope) -> int:
        key = (_whose(scope), term)
        cached = self._cached(key)
        if cached is not None:
            return cached
        return self._store(key, counts.term_frequency(term, scope))

    def matches(self, counts: TermCounts, scope: Scope, terms: Sequence[str]) -> int:
        """At most how many of the user's memories an OR of ``terms`` matches (each term's count, summed)."""
        return sum(self.frequency(counts, t, scope) for t in terms)

    def prune(self, counts: TermCounts, scope: Scope, terms: Sequence[str], max_df: float, min_terms: int
              ) -> list[str]:
        """``terms`` without those in more than ``max_df`` of the user's memories, keeping at least
        ``min_terms`` of those found at all (the rarest), in their original order; a term found in none is kept
        (it costs the word query nothing, and the trigram channel may find a typo by its substrings) but never
        stands in for one that matches."""
        if max_df >= 1.0 or len(terms) <= min_terms:
            return list(terms)
        total = self.documents(counts, scope)
        if total == 0:
            return list(terms)
        df = {t: self.frequency(counts, t, scope) for t in terms}
        found = [t for t in terms if df[t] > 0]  # a term that matches nothing is no rarer term to keep instead
        kept = {t for t in found if df[t] <= max_df * total}
        if len(kept) < min_terms:
            kept = set(sorted(found, key=lambda t: (df[t], t))[:min_terms])
        return [t for t in terms if t in kept or df[t] == 0]  # those the trigram channel may find by substrings
