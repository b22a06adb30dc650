"""Hybrid recall: FTS5 unicode61, FTS5 trigram, vectors and graph, fused by RRF, re-ranked by lifecycle
and trust. Every query is filtered by scope inside SQL (the store's :class:`SearchQueries`) and inside the
vector filter."""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from altm.core import Deferred, Layer, Scope
from altm.models import EmbeddingModel
from altm.recall._metrics import RECALL_DEGRADED, RECALL_STEP_SECONDS, span
from altm.recall.retrieval._assembly import Scored, grouped, scored
from altm.recall.retrieval._concurrent import Concurrent
from altm.recall.retrieval._config import SearchConfig, preset
from altm.recall.retrieval._fusion import (
    add_channel,
    discount_questions,
    fuse,
    ordered,
    propagate,
    session_prior,
)
from altm.recall.retrieval._graph import expand, personalised_pagerank
from altm.recall.retrieval._neighbours import neighbours
from altm.recall.retrieval._policy import ScopePolicy, vector_filters
from altm.recall.retrieval._temporal import time_anchors, time_prior
from altm.recall.retrieval._terms import TermStatistics
from altm.store import CandidateRow, SearchQueries, ShardSet, index_form
from altm.vectors import VectorHit, VectorIndex, VectorIndexError

log = logging.getLogger("altm.recall")

VECTOR_WIDENING = 16
"""How much further than its candidates the vector channel searches when the scope policy leaves too few."""
_IDENTIFIER_RUN = re.compile(r"[\w.\-/]+")
_IDENTIFIER_MARK = re.compile(r"\d|_|\w[.\-/]\w")


def _identifiers(text: str) -> list[str]:
    """Runs of word characters, dots, dashes and slashes (trimmed to start and end at a word character) that
    hold a digit, an underscore or an inner dot, dash or slash: what word tokenization breaks apart. Linear:
    one regex over the whole text from every word boundary backtracked to the text's end (quadratic)."""
    runs = (m.group(0).strip(".-/") for m in _IDENTIFIER_RUN.finditer(text))
    return [run for run in runs if _IDENTIFIER_MARK.search(run)]
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
    role: str | None = None
    trust_status: str = "unverified"
    trust_reason: str | None = None
    flag: str | None = Field(default=None, description="e.g. 'contradicted': shown with its verdict, as a hit is")
    matched_by: list[str]
    score: float
    breakdown: dict[str, float]
    path: list[str]


@dataclass
class SearchResult:
    hits: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)
    config: str = ""


def _word_runs(text: str) -> list[str]:
    """Runs of letters, digits, underscores and combining marks with inner apostrophes and hyphens (as
    ``[\\w][\\w'\\-]*`` had it, marks added: a Devanagari or Tamil word holds vowel signs and viramas, which
    ``\\w`` is not, and fell apart into one-letter scraps). One pass over the text."""
    out: list[str] = []
    start: int | None = None
    for i, ch in enumerate(text):
        if ch.isalnum() or ch == "_" or (not ch.isascii() and unicodedata.category(ch)[0] == "M"):
            if start is None:
                start = i
        elif start is not None and ch not in "'-":
            out.append(text[start:i])
            start = None
    if start is not None:
        out.append(text[start:])
    return out


MAX_QUERY_TERMS = 64
"""The distinct words a query asks the word and trigram channels for. Each costs a count of the memories holding it
and a branch of each channel's match: a pasted log of 3,000 distinct words ran 47,484 SQL statements and held the
event loop for most of a second (a question has a handful)."""


def query_terms(text: str, min_len: int = 2, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The query's distinct words in the form the word index holds (:func:`altm.store.index_form`: NFKC,
    casefolded, so a fullwidth "ＡＢ-１２３４５" asks "ab-12345" and "Straße" "strasse"), without stop words and
    words shorter than ``min_len``; at most ``limit`` of them (:func:`_first_and_last`), in the query's order."""
    seen: dict[str, None] = {}
    for w in _word_runs(index_form(text) or ""):
        w = w.strip("'-")
        if len(w) >= min_len and w not in STOPWORDS:
            seen.setdefault(w, None)
    return _first_and_last(list(seen), limit)


def _first_and_last(terms: Sequence[str], limit: int) -> list[str]:
    """``terms`` (in order), or past ``limit`` of them the first and the last halves: a question comes before or
    after what it pastes (a log, a file), and how rare each term is is not counted (that count is the cost being
    bounded)."""
    if len(terms) <= limit:
        return list(terms)
    return [*terms[:limit // 2], *terms[len(terms) - (limit - limit // 2):]]


Found = list[tuple[str, float]]
"""A channel's candidates with their scores (higher is better), best first."""


@dataclass
class _Channels:
    """What each channel found (its ranking and its scores), and how long each step took."""

    ranked: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        t0 = time.perf_counter()
        with span(f"recall.{step}"):
            yield
        self.timings_ms[step] = (time.perf_counter() - t0) * 1000

    def run(self, name: str, channel: Callable[[], Found]) -> None:
        with self.timed(name):
            found = channel()
            self.ranked[name] = [m for m, _ in found]
            self.scores[name] = dict(found)


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
    def _matching(self, queries: SearchQueries, query: str, policy: ScopePolicy, config: SearchConfig,
                  channels: _Channels) -> None:
        """The word, trigram and vector channels. The query embedding and the vector search run on a helper
        thread while SQLite scores the words (both release the GIL), so the channels cost about the slower
        of the two, not their sum."""
        nearest = Concurrent(lambda: self._nearest(query, policy, config.candidates)) if config.vector else None
        try:
            self._words(queries, query, policy, config, channels)
        finally:
            found = self._nearest_result(nearest)
        if nearest is not None and found is not None:
            vec, hits = found
            channels.run("vector", lambda: self._vector(queries, vec, hits, policy, config.candidates))
            channels.timings_ms["vector"] += nearest.elapsed_ms

    @staticmethod
    def _nearest_result(nearest: Concurrent[tuple[list[float], list[VectorHit]]] | None
                        ) -> tuple[list[float], list[VectorHit]] | None:
        """The vector search's result; None when there is none, or when the embedding model or the index
        failed: recall goes on without its vector channel (an embedding endpoint's outage had failed every
        prepare_turn, though the word and graph channels need no model)."""
        if nearest is None:
            return None
        try:
            return nearest.result()
        except (Deferred, VectorIndexError) as exc:
            log.warning("recall without its vector channel: %s", exc)
            RECALL_DEGRADED.labels(channel="vector").inc()
            return None

    def _words(self, queries: SearchQueries, query: str, policy: ScopePolicy, config: SearchConfig,
               channels: _Channels) -> None:
        if not (config.fts or config.trigram):
            return
        # very common terms are left out of the word query (and so of the trigram fallback)
        words = self.term_stats.prune(queries, policy.scope, query_terms(query), config.max_term_df,
                                      config.min_terms)
        if config.fts:
            # a query of words the user says all the time: bm25 scores the newest rows holding them, not all of them
            newest = config.max_scored if self.term_stats.matches(queries, policy.scope, words) > config.max_scored \
                else None
            channels.run("fts", lambda: queries.words(words, policy, config.candidates, config.context_weight,
                                                      newest=newest))
        if config.trigram:
            tri = self._trigram_terms(query, words, channels.ranked.get("fts"), config)
            if tri:
                channels.run("trigram", lambda: queries.trigrams(tri, policy, config.candidates))

    @staticmethod
    def _trigram_terms(query: str, terms: Sequence[str], fts_hits: Sequence[str] | None,
                       config: SearchConfig) -> list[str]:
        """Substring matching is for what word tokenization breaks (identifiers, paths, versions, typos)."""
        if config.trigram_mode == "always" or (fts_hits is not None and len(fts_hits) < config.top_k):
            return [t for t in terms if len(t) >= 3]
        found = _identifiers(index_form(query) or "")  # the form the trigram index holds
        return _first_and_last([t for t in dict.fromkeys(found) if len(t) >= 3], MAX_QUERY_TERMS)

    def _nearest(self, query: str, policy: ScopePolicy, limit: int) -> tuple[list[float], list[VectorHit]]:
        """Embed the query and search the vector index (no SQL: safe to run beside the word channels)."""
        if self.embedding is None or self.vectors is None:
            return [], []
        with span("recall.nearest"):  # on the helper thread, beside the word channels
            vec = self.embedding.embed_query(query)
            return vec, self.vectors.search_any(vec, vector_filters(policy), limit)

    def _vector(self, queries: SearchQueries, vec: list[float], hits: list[VectorHit], policy: ScopePolicy,
                wanted: int) -> Found:
        """(memory id, cosine) best first. The payload filter scoped the search; the SQL policy now applies
        what the payload cannot hold (supersession, merges, validity and record time). When it leaves fewer than
        ``wanted`` of a full page, the search goes on further (up to ``VECTOR_WIDENING`` times as far): the
        points of merged duplicates (a sentence said in 60 sessions) had filled the page, and the user's other
        memories were never reached."""
        limit = wanted  # the first search asked this many
        while True:
            allowed = queries.allowed([h.memory_id for h in hits], policy)
            found = [(h.memory_id, h.score) for h in hits if h.memory_id in allowed]
            if len(found) >= wanted or len(hits) < limit or limit >= wanted * VECTOR_WIDENING or self.vectors is None:
                return found[:wanted]
            limit *= 4
            hits = self.vectors.search_any(vec, vector_filters(policy), limit)

    def _graph(self, queries: SearchQueries, scope: Scope, seeds: Sequence[str], policy: ScopePolicy,
               config: SearchConfig) -> tuple[list[str], dict[str, list[str]]]:
        if not seeds:
            return [], {}
        sub = expand(queries, scope, seeds, config.graph_hops, config.graph_max_nodes, config.graph_fanout)
        ranks = personalised_pagerank(sub.adjacency, seeds, config.ppr_damping, config.ppr_iterations)
        candidates = [n for n in ranks if n.startswith("mem_")]
        if not candidates:
            return [], {}
        best = self._admitted_by_rank(queries, candidates, ranks, policy)[: config.candidates]
        return best, {n: sub.path_to(n) for n in best}

    @staticmethod
    def _admitted_by_rank(queries: SearchQueries, candidates: Sequence[str], ranks: dict[str, float],
                          policy: ScopePolicy) -> list[str]:
        """The candidates the scope policy admits, by PageRank (ties by id)."""
        allowed = queries.allowed(candidates, policy)
        return sorted((n for n in candidates if n in allowed), key=lambda n: (-ranks[n], n))

    # -- fusion and ranking ----------------------------------------------------------------------------
    def search(self, scope: Scope, session_id: str | None, query: str, config: SearchConfig,
               *, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        with span("recall.search", {"altm.preset": config.name}) as current:
            result = self._search(scope, session_id, query, config, strict_session=strict_session, as_of=as_of,
                                  known_at=known_at)
            current.set_attribute("altm.hits", len(result.hits))
        return result

    def _search(self, scope: Scope, session_id: str | None, query: str, config: SearchConfig,
                *, strict_session: bool, as_of: datetime | None, known_at: datetime | None) -> SearchResult:
        policy = ScopePolicy(scope, session_id, strict_session, config.l0_across_sessions, config.layers,
                             as_of=as_of, known_at=known_at)
        queries = self._queries(scope)
        channels = _Channels()
        self._matching(queries, query, policy, config, channels)
        with channels.timed("fusion"):
            fused = fuse(channels.ranked, channels.scores, config)
            rows = queries.rows(list(fused))
            self._priors(fused, rows, query, config)
            if config.neighbour_seeds:
                self._neighbours(queries, fused, rows, channels.ranked, policy, config)
            if config.question_factor < 1.0:
                discount_questions(fused, {m: r.content for m, r in rows.items() if r.layer == Layer.L0.value},
                                   config.question_factor)
        paths: dict[str, list[str]] = {}
        if config.graph:
            with channels.timed("graph"):
                paths = self._graph_channel(queries, scope, fused, rows, channels.ranked, policy, config)
        with channels.timed("assemble"):
            hits = self._assemble(queries, scope, ordered(fused), rows, channels.ranked, paths, config)
        for step, ms in channels.timings_ms.items():
            RECALL_STEP_SECONDS.labels(step=step).observe(ms / 1000)
        return SearchResult(hits, channels.timings_ms, config.name)

    @staticmethod
    def _priors(fused: dict[str, float], rows: dict[str, CandidateRow], query: str, config: SearchConfig) -> None:
        """A memory gains from its session's overall match and from a date the query names."""
        if config.session_prior:
            session_prior(fused, {m: r.session_id for m, r in rows.items()}, config.session_prior,
                          config.session_prior_top)
        if config.time_prior:
            time_prior(fused, {m: r.valid_from for m, r in rows.items()}, time_anchors(query),
                       config.time_prior, config.time_lookback_days)

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

    def _graph_channel(self, queries: SearchQueries, scope: Scope, fused: dict[str, float],
                       rows: dict[str, CandidateRow], ranked: dict[str, list[str]], policy: ScopePolicy,
                       config: SearchConfig) -> dict[str, list[str]]:
        """Fold the graph channel (from the best fused memories) into ``fused``; the path to each of its
        memories."""
        seeds = [m for m, _ in ordered(fused)[: config.graph_seeds]]
        ranked["graph"], paths = self._graph(queries, scope, seeds, policy, config)
        add_channel(fused, "graph", ranked["graph"], config)
        rows.update(queries.rows([m for m in ranked["graph"] if m not in rows]))
        return paths

    def _assemble(self, queries: SearchQueries, scope: Scope, fused: list[tuple[str, float]],
                  rows: dict[str, CandidateRow], ranked: dict[str, list[str]], paths: dict[str, list[str]],
                  config: SearchConfig) -> list[Hit]:
        if not fused:
            return []
        top = scored(grouped(fused, rows, ranked), config)[: config.top_k]
        sources = queries.source_ids([s.group.row for s in top], agent_id=scope.agent_id)
        return [self._scored_hit(s, sources, paths, config) for s in top]

    def _scored_hit(self, s: Scored, sources: dict[str, list[str]], paths: dict[str, list[str]],
                    config: SearchConfig) -> Hit:
        row = s.group.row
        return self._hit(row, sources[row.memory_id], round(s.final, 6), s.group.channels,
                         s.breakdown(config.fusion), paths.get(row.memory_id))

    @staticmethod
    def _hit(row: CandidateRow, sources: list[str], score: float, channels: dict[str, int],
             breakdown: dict[str, float], path: list[str] | None) -> Hit:
        return Hit(
            memory_id=row.memory_id, layer=row.layer, kind=row.kind, content=row.content,
            content_hash=row.content_hash, scope=row.scope_path, session_id=row.session_id,
            source_id=row.source_id, source_ids=sources, role=row.role, valid_from=row.valid_from,
            method=row.method, trust_status=row.trust_status, trust_reason=_trust_reason(row), flag=_flag(row),
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
        sources = queries.source_ids([rows[m] for m in admitted], agent_id=scope.agent_id)
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
        # an atom that stands for one matched message was matched with it (recall shows them as one hit)
        stand_ins = {m for m, r in queries.rows(candidates).items() if len(r.evidence) == 1 and r.evidence[0] in direct}
        best = self._admitted_by_rank(queries, [n for n in candidates if n not in stand_ins], ranks, policy)[:limit]
        rows = queries.rows(best)
        return [
            Emergent(memory_id=n, layer=rows[n].layer, kind=rows[n].kind, content=rows[n].content, role=rows[n].role,
                     trust_status=rows[n].trust_status, trust_reason=_trust_reason(rows[n]), flag=_flag(rows[n]),
                     matched_by=["graph"], score=round(ranks[n], 6),
                     breakdown={"ppr": round(ranks[n], 6), "hops": float(sub.depth.get(n, 0))},
                     path=sub.path_to(n))
            for n in best
        ]


def _flag(row: CandidateRow) -> str | None:
    """'contradicted' or 'harmful': shown with the hit, never silently dropped."""
    if row.trust_status == "contradicted":
        return "contradicted"
    return "harmful" if row.lc_harmful else None


def _trust_reason(row: CandidateRow) -> str | None:
    if row.trust_status == "contradicted" or not row.lc_harmful:
        return row.trust_reason
    return f"marked harmful {row.lc_harmful} time(s)"
