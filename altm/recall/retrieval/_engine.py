"""Hybrid recall: FTS5 unicode61, FTS5 trigram, vectors and graph, fused by RRF, re-ranked by lifecycle
and trust. Every query is filtered by scope inside SQL (the store's :class:`SearchQueries`) and inside the
vector filter."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from altm.core import Scope
from altm.models import EmbeddingModel
from altm.recall.retrieval._concurrent import Concurrent
from altm.recall.retrieval._config import SearchConfig, preset
from altm.recall.retrieval._fusion import add_channel, fuse, ordered, propagate, session_prior
from altm.recall.retrieval._graph import expand, personalised_pagerank
from altm.recall.retrieval._neighbours import neighbours
from altm.recall.retrieval._policy import ScopePolicy, vector_filters
from altm.recall.retrieval._temporal import time_anchors, time_prior
from altm.recall.retrieval._terms import TermStatistics
from altm.store import CandidateRow, SearchQueries, ShardSet
from altm.vectors import VectorHit, VectorIndex

_WORD = re.compile(r"[\w][\w'\-]*", re.UNICODE)
_IDENTIFIER = re.compile(r"\b[\w.\-/]*(?:\d|_|\w[.\-/]\w)[\w.\-/]*\b")
STOPWORDS = frozenset(
    "a an the and or but if then of to in on at by for with about from into over after before is are was were be "
    "been being am do does did have has had i me my we our you your he she it its they them their this that these "
    "those what which who whom whose when where why how there here not no yes can could should would will shall "
    "may might must so as than too very just also any some all each more most other such only own same s t don "
    "let us get got".split()
)

CHANNELS = ("fts", "trigram", "vector", "neighbours", "graph")


class Hit(BaseModel):
    """One recalled memory with its provenance, channel ranks and score breakdown."""

    memory_id: str
    layer: str
    kind: str
    content: str
    content_hash: str
    scope: str
    session_id: str | None
    source_id: str | None
    source_ids: list[str] = Field(description="L0 source ids this memory stands for (its own or its evidence)")
    role: str | None
    valid_from: str | None
    method: str
    trust_status: str
    trust_reason: str | None
    flag: str | None = Field(default=None, description="e.g. 'contradicted': shown, never silently dropped")
    score: float
    channels: dict[str, int] = Field(description="1-based rank of this memory in each channel that found it")
    breakdown: dict[str, float]
    graph_path: list[str] | None = None
    compression_level: int = Field(default=0, description="C0 full … C4 marker only (lifecycle)")


class Emergent(BaseModel):
    """A memory related to a query through the graph that the query itself does not match."""

    memory_id: str
    layer: str
    kind: str
    content: str
    matched_by: list[str]
    score: float
    breakdown: dict[str, float]
    path: list[str]


@dataclass
class SearchResult:
    hits: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)
    config: str = ""


def query_terms(text: str, min_len: int = 2) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.casefold()):
        w = w.strip("'-")
        if len(w) >= min_len and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


class Retriever:
    """Read-side of the store. Shares the shards with the writer (embedded) or opens them read-only."""

    def __init__(self, shards: ShardSet, embedding: EmbeddingModel | None = None,
                 vectors: VectorIndex | None = None) -> None:
        self.shards = shards
        self.embedding = embedding
        self.vectors = vectors
        self.term_stats = TermStatistics()

    def _queries(self, scope: Scope) -> SearchQueries:
        return SearchQueries.for_scope(self.shards, scope)

    # -- channels --------------------------------------------------------------------------------------
    def _nearest(self, query: str, policy: ScopePolicy, limit: int) -> list[VectorHit]:
        """Embed the query and search the vector index (no SQL: safe to run beside the word channels)."""
        if self.embedding is None or self.vectors is None:
            return []
        (vec,) = self.embedding.embed([query])
        return self.vectors.search_any(vec, vector_filters(policy), limit)

    @staticmethod
    def _vector(queries: SearchQueries, hits: list[VectorHit], policy: ScopePolicy) -> list[tuple[str, float]]:
        """(memory id, cosine) best first. The payload filter scoped the search; the SQL policy now applies
        what the payload cannot hold (supersession, validity and record time)."""
        allowed = queries.allowed([h.memory_id for h in hits], policy)
        return [(h.memory_id, h.score) for h in hits if h.memory_id in allowed]

    def _graph(self, queries: SearchQueries, scope: Scope, seeds: Sequence[str], policy: ScopePolicy,
               config: SearchConfig) -> tuple[list[str], dict[str, list[str]]]:
        if not seeds:
            return [], {}
        sub = expand(queries, scope, seeds, config.graph_hops, config.graph_max_nodes, config.graph_fanout)
        ranks = personalised_pagerank(sub.adjacency, seeds, config.ppr_damping, config.ppr_iterations)
        candidates = [n for n in ranks if n.startswith("mem_")]
        if not candidates:
            return [], {}
        allowed = queries.allowed(candidates, policy)
        ordered = sorted((n for n in candidates if n in allowed), key=lambda n: (-ranks[n], n))
        ordered = ordered[: config.candidates]
        return ordered, {n: sub.path_to(n) for n in ordered}

    # -- fusion and ranking ----------------------------------------------------------------------------
    def search(self, scope: Scope, session_id: str | None, query: str, config: SearchConfig,
               *, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        timings: dict[str, float] = {}
        policy = ScopePolicy(scope, session_id, strict_session, config.l0_across_sessions, config.layers,
                             as_of=as_of, known_at=known_at)
        queries = self._queries(scope)
        terms = query_terms(query)
        ranked: dict[str, list[str]] = {}
        scores: dict[str, dict[str, float]] = {}

        def timed(name: str, fn: Any) -> None:
            t0 = time.perf_counter()
            found: list[tuple[str, float]] = fn()
            ranked[name] = [m for m, _ in found]
            scores[name] = dict(found)
            timings[name] = (time.perf_counter() - t0) * 1000

        # the query embedding and the vector search run on a helper thread while SQLite scores the words
        # (both release the GIL), so the channels cost about the slower of the two, not their sum
        nearest = Concurrent(lambda: self._nearest(query, policy, config.candidates)) if config.vector else None
        try:
            # very common terms are left out of the word query (and so of the trigram fallback)
            words = self.term_stats.prune(queries, terms, config.max_term_df,
                                          config.min_terms) if config.fts or config.trigram else []
            if config.fts:
                timed("fts", lambda: queries.words(words, policy, config.candidates, config.context_weight))
            if config.trigram:
                tri = self._trigram_terms(query, words, ranked.get("fts"), config)
                if tri:
                    timed("trigram", lambda: queries.trigrams(tri, policy, config.candidates))
        finally:
            nearest_hits = nearest.result() if nearest is not None else []
        if nearest is not None:
            timed("vector", lambda: self._vector(queries, nearest_hits, policy))
            timings["vector"] += nearest.elapsed_ms
        t0 = time.perf_counter()
        fused = fuse(ranked, scores, config)
        rows = queries.rows(list(fused))
        if config.session_prior:
            session_prior(fused, {m: r.session_id for m, r in rows.items()}, config.session_prior,
                          config.session_prior_top)
        if config.time_prior:
            time_prior(fused, {m: r.valid_from for m, r in rows.items()}, time_anchors(query),
                       config.time_prior, config.time_lookback_days)
        if config.neighbour_seeds:
            self._neighbours(queries, fused, rows, ranked, policy, config)
        timings["fusion"] = (time.perf_counter() - t0) * 1000
        paths: dict[str, list[str]] = {}
        if config.graph:
            t0 = time.perf_counter()
            seeds = [m for m, _ in ordered(fused)[: config.graph_seeds]]
            ranked["graph"], paths = self._graph(queries, scope, seeds, policy, config)
            add_channel(fused, "graph", ranked["graph"], config)
            rows.update(queries.rows([m for m in ranked["graph"] if m not in rows]))
            timings["graph"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        hits = self._assemble(queries, ordered(fused), rows, ranked, paths, config)
        timings["assemble"] = (time.perf_counter() - t0) * 1000
        return SearchResult(hits, timings, config.name)

    @staticmethod
    def _neighbours(queries: SearchQueries, fused: dict[str, float], rows: dict[str, CandidateRow],
                    ranked: dict[str, list[str]], policy: ScopePolicy, config: SearchConfig) -> None:
        seeds = [m for m, _ in ordered(fused)[: config.neighbour_seeds]]
        around = neighbours(queries, seeds, config.neighbours_after, config.neighbours_before)
        admitted = queries.admitted(list(around), policy)
        ranked["neighbours"] = admitted
        propagate(fused, {m: around[m] for m in admitted}, config.channel_weights.get("neighbours", 1.0),
                  config.neighbour_decay)
        rows.update(queries.rows([m for m in admitted if m not in rows]))

    @staticmethod
    def _trigram_terms(query: str, terms: Sequence[str], fts_hits: Sequence[str] | None,
                       config: SearchConfig) -> list[str]:
        """Substring matching is for what word tokenization breaks (identifiers, paths, versions, typos)."""
        if config.trigram_mode == "always" or (fts_hits is not None and len(fts_hits) < config.top_k):
            return [t for t in terms if len(t) >= 3]
        return [t for t in _IDENTIFIER.findall(query) if len(t) >= 3]

    def _assemble(self, queries: SearchQueries, fused: list[tuple[str, float]], rows: dict[str, CandidateRow],
                  ranked: dict[str, list[str]], paths: dict[str, list[str]], config: SearchConfig) -> list[Hit]:
        if not fused:
            return []
        stands_for = self._single_turn_evidence(rows)
        # memories sharing a content hash count as one (their scores add up), and so does a memory derived
        # from exactly one turn with that turn (the better score counts, the turn is shown): merge channels
        groups: dict[str, dict[str, Any]] = {}
        for mid, score in fused:
            row = rows.get(mid)
            if row is None:
                continue
            turn = rows[stands_for[mid]] if mid in stands_for else row
            key = f"{turn.kind}:{turn.content_hash}"
            group = groups.get(key)
            channels = {c: ids_.index(mid) + 1 for c, ids_ in ranked.items() if mid in ids_}
            if group is None:
                groups[key] = {"row": row, "fused": score, "channels": channels, "members": [mid]}
            else:
                derived = group["row"].memory_id in stands_for
                if derived and stands_for[group["row"].memory_id] == mid:
                    group["row"] = row  # the message itself stands for the pair: the original, not an extract
                group["fused"] += 0.0 if derived or mid in stands_for else score
                group["members"].append(mid)
                for c, r in channels.items():
                    group["channels"][c] = min(group["channels"].get(c, r), r)
        hits = []
        for group in groups.values():
            row = group["row"]
            trust = config.trust_factors.get(row.trust_status, 1.0)
            lifecycle = max(0.05, float(row.lc_weight))
            final = group["fused"] * trust * lifecycle
            hits.append((final, group, trust, lifecycle))
        hits.sort(key=lambda x: (-x[0], x[1]["row"].memory_id))
        top = hits[: config.top_k]
        sources = queries.source_ids([g["row"] for _, g, _, _ in top])
        return [
            self._hit(group["row"], sources[group["row"].memory_id], round(final, 6), group["channels"],
                      {config.fusion: round(group["fused"], 6), "trust": trust, "lifecycle": lifecycle,
                       "final": round(final, 6)}, paths.get(group["row"].memory_id))
            for final, group, trust, lifecycle in top
        ]

    @staticmethod
    def _hit(row: CandidateRow, sources: list[str], score: float, channels: dict[str, int],
             breakdown: dict[str, float], path: list[str] | None) -> Hit:
        return Hit(
            memory_id=row.memory_id, layer=row.layer, kind=row.kind, content=row.content,
            content_hash=row.content_hash, scope=row.scope_path, session_id=row.session_id,
            source_id=row.source_id, source_ids=sources, role=row.role, valid_from=row.valid_from,
            method=row.method, trust_status=row.trust_status,
            trust_reason=row.trust_reason if row.trust_status == "contradicted" or not row.lc_harmful
            else f"marked harmful {row.lc_harmful} time(s)",
            flag="contradicted" if row.trust_status == "contradicted"
            else ("harmful" if row.lc_harmful else None),
            score=score, channels=channels, breakdown=breakdown, graph_path=path,
            compression_level=row.lc_compression,
        )

    def hits_for(self, scope: Scope, session_id: str | None, memory_ids: Sequence[str]) -> list[Hit]:
        """These memories as hits, in the order given, as far as the scope policy still admits them (a bundle
        rebuilt for a retried ``prepare_turn`` whose original bundle this process no longer holds)."""
        queries = self._queries(scope)
        policy = ScopePolicy(scope, session_id, l0_across_sessions=True)
        admitted = queries.admitted(list(memory_ids), policy)
        rows = queries.rows(admitted)
        sources = queries.source_ids([rows[m] for m in admitted])
        return [self._hit(rows[m], sources[m], 0.0, {}, {"replayed": 1.0}, None) for m in admitted]

    def emerge(self, scope: Scope, query: str, *, session_id: str | None = None, seed_limit: int = 5,
               max_hops: int = 2, limit: int = 10) -> list[Emergent]:
        """Memories related to the query through the graph that the query itself does not match.
        Read-only: nothing is written."""
        base = preset("hybrid").model_copy(update={"top_k": max(seed_limit * 4, 20), "l0_across_sessions": True})
        matched = self.search(scope, session_id, query, base)
        direct = {h.memory_id for h in matched.hits}
        seeds = [h.memory_id for h in matched.hits[:seed_limit]]
        if not seeds:
            return []
        queries = self._queries(scope)
        sub = expand(queries, scope, seeds, max_hops * 2, 2000)
        ranks = personalised_pagerank(sub.adjacency, seeds)
        policy = ScopePolicy(scope, session_id, l0_across_sessions=True)
        candidates = [n for n in ranks if n.startswith("mem_") and n not in direct]
        allowed = queries.allowed(candidates, policy)
        ordered = sorted((n for n in candidates if n in allowed), key=lambda n: (-ranks[n], n))[:limit]
        rows = queries.rows(ordered)
        return [
            Emergent(memory_id=n, layer=rows[n].layer, kind=rows[n].kind, content=rows[n].content,
                     matched_by=["graph"], score=round(ranks[n], 6),
                     breakdown={"ppr": round(ranks[n], 6), "hops": float(sub.depth.get(n, 0))},
                     path=sub.path_to(n))
            for n in ordered
        ]

    @staticmethod
    def _single_turn_evidence(rows: dict[str, CandidateRow]) -> dict[str, str]:
        """Derived candidates citing exactly one L0 message that is a candidate too → that message's id."""
        out: dict[str, str] = {}
        for mid, row in rows.items():
            if row.layer == "L0":
                continue
            turn = rows.get(row.evidence[0]) if len(row.evidence) == 1 else None
            if turn is not None and turn.layer == "L0":
                out[mid] = turn.memory_id
        return out
