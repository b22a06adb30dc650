"""Hybrid recall: FTS5 unicode61, FTS5 trigram, vectors and graph, fused by RRF, re-ranked by lifecycle
and trust. Every query is filtered by scope inside SQL and inside the vector filter."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, Field

from ...schemas import Scope
from ...streams.partitioner import partition_for
from ..models import Embedder
from ..store import MEMORY_COLUMNS, ShardSet
from ..vectors import VectorIndex
from ._config import SearchConfig
from ._graph import expand, personalised_pagerank
from ._policy import ScopePolicy

_WORD = re.compile(r"[\w][\w'\-]*", re.UNICODE)
_IDENTIFIER = re.compile(r"\b[\w.\-/]*(?:\d|_|\w[.\-/]\w)[\w.\-/]*\b")
STOPWORDS = frozenset(
    "a an the and or but if then of to in on at by for with about from into over after before is are was were be "
    "been being am do does did have has had i me my we our you your he she it its they them their this that these "
    "those what which who whom whose when where why how there here not no yes can could should would will shall "
    "may might must so as than too very just also any some all each more most other such only own same s t don "
    "let us get got".split()
)

CHANNELS = ("fts", "trigram", "vector", "graph")


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


def _fts_expression(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Retriever:
    """Read-side of the store. Shares the shards with the writer (embedded) or opens them read-only."""

    def __init__(self, shards: ShardSet, embedder: Embedder | None = None, vectors: VectorIndex | None = None
                 ) -> None:
        self.shards = shards
        self.embedder = embedder
        self.vectors = vectors

    def conn_for(self, scope: Scope) -> sqlite3.Connection:
        return self.shards.get(partition_for(scope.home, self.shards.partitions)).conn

    # -- channels --------------------------------------------------------------------------------------
    def _fts(self, conn: sqlite3.Connection, table: str, terms: Sequence[str], policy: ScopePolicy,
             limit: int, context_weight: float | None = None) -> list[str]:
        if not terms:
            return []
        where, args = policy.sql("m")
        expression = _fts_expression(terms)
        if context_weight is not None:  # the word index: content, context, home
            rank = f"bm25({table}, 1.0, {float(context_weight)}, 0.0)"
            home = " ".join((policy.scope.tenant_id, policy.scope.workspace_id, policy.scope.user_id))
            expression = f'home : "{home.replace(chr(34), "")}" AND ({{content context}} : ({expression}))'
        else:
            rank = f"bm25({table})"
        rows = conn.execute(
            f"SELECT m.memory_id FROM {table} JOIN memories m ON m.rowid = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where} ORDER BY {rank}, m.memory_id LIMIT ?",
            [expression, *args, limit],
        ).fetchall()
        return [r[0] for r in rows]

    def _vector(self, query: str, policy: ScopePolicy, limit: int) -> list[str]:
        if self.embedder is None or self.vectors is None:
            return []
        (vec,) = self.embedder.embed([query])
        return [h.memory_id for h in self.vectors.search_any(vec, policy.vector_filters(), limit)]

    def _graph(self, conn: sqlite3.Connection, scope: Scope, seeds: Sequence[str], policy: ScopePolicy,
               config: SearchConfig) -> tuple[list[str], dict[str, list[str]]]:
        if not seeds:
            return [], {}
        sub = expand(conn, scope, seeds, config.graph_hops, config.graph_max_nodes, config.graph_fanout)
        ranks = personalised_pagerank(sub.adjacency, seeds, config.ppr_damping, config.ppr_iterations)
        candidates = [n for n in ranks if n.startswith("mem_")]
        if not candidates:
            return [], {}
        allowed = self._allowed(conn, candidates, policy)
        ordered = sorted((n for n in candidates if n in allowed), key=lambda n: (-ranks[n], n))
        ordered = ordered[: config.candidates]
        return ordered, {n: sub.path_to(n) for n in ordered}

    def _admitted(self, conn: sqlite3.Connection, ids: list[str], policy: ScopePolicy) -> list[str]:
        allowed = self._allowed(conn, ids, policy)
        return [m for m in ids if m in allowed]

    @staticmethod
    def _allowed(conn: sqlite3.Connection, ids: Sequence[str], policy: ScopePolicy) -> set[str]:
        """The candidates the scope policy admits (primary-key lookups, then the policy predicate)."""
        where, args = policy.sql("m")
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            values = ", ".join("(?)" for _ in chunk)
            rows = conn.execute(
                f"WITH c(id) AS (VALUES {values}) SELECT m.memory_id FROM c CROSS JOIN memories m "
                f"ON m.memory_id = c.id WHERE {where}", [*chunk, *args]).fetchall()
            out.update(r[0] for r in rows)
        return out

    # -- fusion and ranking ----------------------------------------------------------------------------
    def search(self, scope: Scope, session_id: str | None, query: str, config: SearchConfig,
               *, strict_session: bool = False, as_of: datetime | None = None,
               known_at: datetime | None = None) -> SearchResult:
        timings: dict[str, float] = {}
        policy = ScopePolicy(scope, session_id, strict_session, config.l0_across_sessions, config.layers,
                             as_of=as_of, known_at=known_at)
        conn = self.conn_for(scope)
        terms = query_terms(query)
        ranked: dict[str, list[str]] = {}

        def timed(name: str, fn: Any) -> None:
            t0 = time.perf_counter()
            ranked[name] = fn()
            timings[name] = (time.perf_counter() - t0) * 1000

        if config.fts:
            timed("fts", lambda: self._fts(conn, "memories_fts", terms, policy, config.candidates,
                                           config.context_weight))
        if config.trigram:
            tri = self._trigram_terms(query, terms, ranked.get("fts"), config)
            if tri:
                timed("trigram", lambda: self._fts(conn, "memories_fts_tri", tri, policy, config.candidates))
        if config.vector:
            # the payload filter scopes the search; the SQL policy then applies what the payload cannot hold
            # (supersession, validity and record time)
            timed("vector", lambda: self._admitted(conn, self._vector(query, policy, config.candidates), policy))
        paths: dict[str, list[str]] = {}
        if config.graph:
            t0 = time.perf_counter()
            seeds = [m for m, _ in self._rrf(ranked, config)[: config.graph_seeds]]
            ranked["graph"], paths = self._graph(conn, scope, seeds, policy, config)
            timings["graph"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        hits = self._assemble(conn, ranked, paths, config)
        timings["assemble"] = (time.perf_counter() - t0) * 1000
        return SearchResult(hits, timings, config.name)

    @staticmethod
    def _trigram_terms(query: str, terms: Sequence[str], fts_hits: Sequence[str] | None,
                       config: SearchConfig) -> list[str]:
        """Substring matching is for what word tokenization breaks (identifiers, paths, versions, typos)."""
        if config.trigram_mode == "always" or (fts_hits is not None and len(fts_hits) < config.top_k):
            return [t for t in terms if len(t) >= 3]
        return [t for t in _IDENTIFIER.findall(query) if len(t) >= 3]

    @staticmethod
    def _rrf(ranked: dict[str, list[str]], config: SearchConfig) -> list[tuple[str, float]]:
        scores: dict[str, float] = {}
        for channel, ids in ranked.items():
            weight = config.channel_weights.get(channel, 1.0)
            for rank, mid in enumerate(ids, start=1):
                scores[mid] = scores.get(mid, 0.0) + weight / (config.rrf_k + rank)
        return sorted(scores.items(), key=lambda x: (-x[1], x[0]))

    def _assemble(self, conn: sqlite3.Connection, ranked: dict[str, list[str]], paths: dict[str, list[str]],
                  config: SearchConfig) -> list[Hit]:
        fused = self._rrf(ranked, config)
        if not fused:
            return []
        ids = [m for m, _ in fused]
        rows = self._rows(conn, ids)
        # memories sharing a content hash count as one: keep the best-fused, merge the channels
        groups: dict[str, dict[str, Any]] = {}
        for mid, score in fused:
            row = rows.get(mid)
            if row is None:
                continue
            key = f"{row['kind']}:{row['content_hash']}"
            group = groups.get(key)
            channels = {c: ids_.index(mid) + 1 for c, ids_ in ranked.items() if mid in ids_}
            if group is None:
                groups[key] = {"row": row, "rrf": score, "channels": channels, "members": [mid]}
            else:
                group["rrf"] += score
                group["members"].append(mid)
                for c, r in channels.items():
                    group["channels"][c] = min(group["channels"].get(c, r), r)
        hits = []
        for group in groups.values():
            row = group["row"]
            trust = config.trust_factors.get(row["trust_status"], 1.0)
            lifecycle = max(0.05, float(row["lc_weight"]))
            final = group["rrf"] * trust * lifecycle
            hits.append((final, group, trust, lifecycle))
        hits.sort(key=lambda x: (-x[0], x[1]["row"]["memory_id"]))
        top = hits[: config.top_k]
        sources = self._source_ids(conn, [g["row"] for _, g, _, _ in top])
        out = []
        for final, group, trust, lifecycle in top:
            row = group["row"]
            mid = row["memory_id"]
            out.append(Hit(
                memory_id=mid, layer=row["layer"], kind=row["kind"], content=row["content"],
                content_hash=row["content_hash"],
                scope="/".join((row["tenant_id"], row["workspace_id"], row["user_id"], row["agent_id"])),
                session_id=row["session_id"], source_id=row["source_id"], source_ids=sources[mid],
                role=row["role"], valid_from=row["valid_from"], method=row["method"],
                trust_status=row["trust_status"],
                trust_reason=row["trust_reason"] if row["trust_status"] == "contradicted" or not row["lc_harmful"]
                else f"marked harmful {row['lc_harmful']} time(s)",
                flag="contradicted" if row["trust_status"] == "contradicted"
                else ("harmful" if row["lc_harmful"] else None),
                score=round(final, 6), channels=group["channels"],
                breakdown={"rrf": round(group["rrf"], 6), "trust": trust, "lifecycle": lifecycle,
                           "final": round(final, 6)},
                graph_path=paths.get(mid), compression_level=int(row["lc_compression"] or 0),
            ))
        return out

    @staticmethod
    def _rows(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        cols = ", ".join(MEMORY_COLUMNS)
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            for r in conn.execute(
                f"SELECT {cols} FROM memories WHERE memory_id IN ({', '.join('?' for _ in chunk)})", chunk
            ):
                out[r[0]] = dict(zip(MEMORY_COLUMNS, tuple(r), strict=True))
        return out

    @staticmethod
    def _source_ids(conn: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
        """L0 source ids each memory stands for: its own, or those of its evidence chain."""
        out: dict[str, list[str]] = {}
        for row in rows:
            if row["layer"] == "L0":
                out[row["memory_id"]] = [row["source_id"]] if row["source_id"] else []
                continue
            frontier = list(orjson.loads(row["evidence"]))
            seen: set[str] = set()
            found: list[str] = []
            while frontier:
                batch = [f for f in frontier if f not in seen]
                frontier = []
                if not batch:
                    break
                seen.update(batch)
                marks = ", ".join("?" for _ in batch)
                for mid, layer, source_id, evidence in conn.execute(
                    f"SELECT memory_id, layer, source_id, evidence FROM memories WHERE memory_id IN ({marks}) "
                    "ORDER BY valid_from, memory_id", batch,
                ):
                    if layer == "L0":
                        if source_id and source_id not in found:
                            found.append(source_id)
                    else:
                        frontier += orjson.loads(evidence)
            out[row["memory_id"]] = found
        return out
