"""Recall's queries on one shard: the word and trigram indexes, the scope policy over candidate ids, candidate
rows and the turns they stand for, a session's conversational order, graph edges and term counts.

Recall keeps the algorithms (channel orchestration, fusion, priors, neighbour propagation, BFS and PageRank,
term pruning, assembly); every statement they need is here. Candidates are filtered by the scope policy
inside SQL (:meth:`SearchQueries.allowed`, and the word channel's own ``MATCH`` filter).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

import orjson

from altm.core import Scope, partition_for
from altm.store._conversation import neighbours
from altm.store._policy import ScopePolicy, home_substring, visible_token
from altm.store._shard import Shard
from altm.store._shardset import ShardSet
from altm.store._sql import chunks, marks

_CHUNK = 500  # ids per statement (SQLite binds at most 32766 parameters; this keeps statements small)


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """A memory as recall ranks and shows it (the columns of ``memories`` recall reads)."""

    memory_id: str
    tenant_id: str
    workspace_id: str
    user_id: str
    agent_id: str
    session_id: str | None
    layer: str
    kind: str
    content: str
    content_hash: str
    source_id: str | None
    role: str | None
    evidence: tuple[str, ...]
    method: str
    valid_from: str | None
    trust_status: str
    trust_reason: str | None
    lc_weight: float
    lc_harmful: int
    lc_compression: int

    @property
    def scope_path(self) -> str:
        return "/".join((self.tenant_id, self.workspace_id, self.user_id, self.agent_id))


class Edge(NamedTuple):
    """One non-rejected graph edge (a tuple: edges sort and deduplicate by value)."""

    src_id: str
    dst_id: str
    weight: float
    confidence: float


class SessionNeighbours(NamedTuple):
    """The L0 messages right after and right before a message in its session, nearest first."""

    following: list[str]
    preceding: list[str]


_CANDIDATE_COLUMNS = tuple(f.name for f in fields(CandidateRow))
_CANDIDATES = f"SELECT {', '.join(_CANDIDATE_COLUMNS)} FROM memories WHERE memory_id IN ({{marks}})"
_ALLOWED = ("WITH c(id) AS (VALUES {values}) SELECT m.memory_id FROM c CROSS JOIN memories m "
            "ON m.memory_id = c.id WHERE {where}")
_MATCH = ("SELECT m.memory_id, {rank} AS r FROM {table} JOIN memories m ON m.rowid = {table}.rowid "
          "WHERE {table} MATCH ? AND {table}.rowid >= ? AND {where} ORDER BY r, m.memory_id LIMIT ?")
_NEWEST = ("SELECT {table}.rowid FROM {table} JOIN memories m ON m.rowid = {table}.rowid "
           "WHERE {table} MATCH ? AND {where} ORDER BY {table}.rowid DESC LIMIT 1 OFFSET ?")
_EVIDENCE = ("SELECT COALESCE(valid_from, ''), memory_id, layer, source_id, evidence, agent_id FROM memories "
             "WHERE memory_id IN ({marks})")
_SESSION_SEEDS = ("SELECT memory_id, tenant_id, workspace_id, user_id, agent_id, session_id, valid_from, source_id, "
                  "role FROM memories WHERE memory_id IN ({marks}) AND layer = 'L0'")
_SAME_SESSION = ("tenant_id = ? AND workspace_id = ? AND user_id = ? AND agent_id = ? AND session_id IS ? "
                 "AND layer = 'L0'")
_EDGES = ("SELECT src_id, dst_id, weight, confidence FROM graph_edges WHERE {end} = ? AND rejected = 0 "
          "AND tenant_id = ? AND workspace_id = ? AND user_id = ? ORDER BY weight * confidence DESC, edge_id LIMIT ?")
_DOCUMENTS = ("SELECT COUNT(*) FROM memories WHERE tenant_id = ? AND workspace_id = ? AND user_id = ? "
              "AND (agent_id = ? OR layer = 'L4')")
_TERM_DOCUMENTS = "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?"


def _phrase(term: str) -> str:
    """A term as one FTS5 string (quotes doubled), so query syntax in it is taken literally."""
    return '"' + term.replace('"', '""') + '"'


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(_phrase(t) for t in terms)


def _candidate(row: sqlite3.Row) -> CandidateRow:
    values = dict(zip(_CANDIDATE_COLUMNS, tuple(row), strict=True))
    values["evidence"] = tuple(orjson.loads(values["evidence"]))
    values["lc_weight"] = float(values["lc_weight"])
    values["lc_compression"] = int(values["lc_compression"] or 0)
    return CandidateRow(**values)


class SearchQueries:
    """Recall's read queries, bound to the shard of one scope home."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    @classmethod
    def for_scope(cls, shards: ShardSet, scope: Scope) -> SearchQueries:
        """The queries on the shard that holds ``scope``'s home."""
        return cls(shards.get(partition_for(scope.home, shards.partitions)))

    @property
    def partition(self) -> int:
        return self.shard.partition

    @property
    def _conn(self) -> sqlite3.Connection:
        return self.shard._db

    # -- word channels -----------------------------------------------------------------------------------
    def words(self, terms: Sequence[str], policy: ScopePolicy, limit: int, context_weight: float, *,
              newest: int | None = None) -> list[tuple[str, float]]:
        """The word index (content, and the preceding message's text at ``context_weight``), restricted to
        the policy's groups inside the match: (memory id, -bm25), best first. With ``newest``, only the newest
        that many rows matching are scored (bm25 reads each row's size: a query of words in every other memory
        of a long history scored all of them)."""
        if not terms:
            return []
        rank = f"bm25(memories_fts, 1.0, {float(context_weight)}, 0.0)"
        expression = f"{policy.fts_filter()} AND ({{content context}} : ({_any_of(terms)}))"
        return self._match("memories_fts", rank, expression, policy, limit, newest=newest)

    def trigrams(self, terms: Sequence[str], policy: ScopePolicy, limit: int) -> list[tuple[str, float]]:
        """The trigram index (substrings of the content): (memory id, -bm25), best first."""
        if not terms:
            return []
        # the home inside the match: FTS5 scores this user's rows only, not every row of the shard holding the terms
        expression = f"{home_substring(policy.scope)} AND content : ({_any_of(terms)})"
        return self._match("memories_fts_tri", "bm25(memories_fts_tri, 1.0, 0.0)", expression, policy, limit)

    def _match(self, table: str, rank: str, expression: str, policy: ScopePolicy, limit: int, *,
               newest: int | None = None) -> list[tuple[str, float]]:
        where, args = policy.sql("m")
        floor = 0
        if newest is not None:  # the rowid of the newest-th row the query admits, read without scoring (rowid order)
            found = self._conn.execute(_NEWEST.format(table=table, where=where),
                                       [expression, *args, newest - 1]).fetchone()
            floor = int(found[0]) if found is not None else 0
        sql = _MATCH.format(table=table, rank=rank, where=where)
        rows = self._conn.execute(sql, [expression, floor, *args, limit]).fetchall()
        return [(r[0], -float(r[1])) for r in rows]

    # -- the scope policy over candidates ------------------------------------------------------------------
    def allowed(self, ids: Sequence[str], policy: ScopePolicy) -> set[str]:
        """The candidates the scope policy admits (primary-key lookups, then the policy predicate)."""
        where, args = policy.sql("m")
        out: set[str] = set()
        for chunk in chunks(ids, _CHUNK):
            sql = _ALLOWED.format(values=", ".join("(?)" for _ in chunk), where=where)
            out.update(r[0] for r in self._conn.execute(sql, [*chunk, *args]))
        return out

    def admitted(self, ids: Sequence[str], policy: ScopePolicy) -> list[str]:
        """``ids`` the scope policy admits, in the order given."""
        allowed = self.allowed(ids, policy)
        return [m for m in ids if m in allowed]

    # -- candidate rows ----------------------------------------------------------------------------------
    def rows(self, ids: Sequence[str]) -> dict[str, CandidateRow]:
        """The rows of the memories among ``ids`` that exist (no scope check: pass admitted ids)."""
        out: dict[str, CandidateRow] = {}
        for chunk in chunks(ids, _CHUNK):
            for r in self._conn.execute(_CANDIDATES.format(marks=marks(chunk)), chunk):
                out[r[0]] = _candidate(r)
        return out

    def source_ids(self, rows: Sequence[CandidateRow], *, agent_id: str) -> dict[str, list[str]]:
        """L0 source ids each memory stands for: its own, or those of its evidence chain (oldest first), as far
        as they are the turns of the asking agent ``agent_id``: a persona facet is the user's, seen by every
        agent of the user, but the turns it came from stay their agent's (as in the inspector)."""
        return {row.memory_id: self._sources_of(row, agent_id) for row in rows}

    def _sources_of(self, row: CandidateRow, agent_id: str) -> list[str]:
        if row.layer == "L0":
            return [row.source_id] if row.source_id else []
        found: dict[str, None] = {}  # in order, once each
        seen: set[str] = set()
        frontier = list(row.evidence)
        while batch := list(dict.fromkeys(f for f in frontier if f not in seen)):
            seen.update(batch)
            frontier = self._evidence_layer(batch, found, agent_id)
        return list(found)

    def _evidence_layer(self, batch: list[str], found: dict[str, None], agent_id: str) -> list[str]:
        """Add the source ids of the asking agent's L0 messages among ``batch`` to ``found`` (oldest first, once
        each); the evidence of the others, one layer further down."""
        rows = sorted(tuple(r) for chunk in chunks(batch, _CHUNK)
                      for r in self._conn.execute(_EVIDENCE.format(marks=marks(chunk)), chunk))
        below: list[str] = []
        for _at, _mid, layer, source_id, evidence, agent in rows:
            if layer != "L0":
                below += orjson.loads(evidence)
            elif source_id and agent == agent_id:
                found.setdefault(source_id, None)
        return below

    # -- conversational order ----------------------------------------------------------------------------
    def session_neighbours(self, seeds: Sequence[str], after: int, before: int) -> dict[str, SessionNeighbours]:
        """For each L0 message among ``seeds``: up to ``after`` messages after it and ``before`` before it in
        its session of its agent (by time, then source id, then id). Other seeds are left out."""
        if not seeds:
            return {}
        found = self._conn.execute(_SESSION_SEEDS.format(marks=marks(seeds)), list(seeds)).fetchall()
        out: dict[str, SessionNeighbours] = {}
        for row in found:
            keys = list(row[1:6])
            anchor = {"valid_from": row[6], "source_id": row[7], "role": row[8], "memory_id": row[0]}
            out[row[0]] = SessionNeighbours(
                [r["memory_id"] for r in neighbours(self._conn, _SAME_SESSION, keys, anchor, "next", after)],
                [r["memory_id"] for r in neighbours(self._conn, _SAME_SESSION, keys, anchor, "previous", before)])
        return out

    # -- graph -------------------------------------------------------------------------------------------
    def edges_of(self, node: str, scope: Scope, fanout: int) -> list[Edge]:
        """The strongest ``fanout`` non-rejected edges of ``scope``'s home on each side of a node (outgoing,
        then incoming): hubs (an entity in thousands of memories) carry little signal each, and must not
        flood a walk."""
        home = [scope.tenant_id, scope.workspace_id, scope.user_id]
        out: list[Edge] = []
        for end in ("src_id", "dst_id"):
            out += [Edge(*r) for r in self._conn.execute(_EDGES.format(end=end), [node, *home, fanout])]
        return out

    # -- term statistics ---------------------------------------------------------------------------------
    def document_count(self, scope: Scope) -> int:
        """Memories ``scope``'s agent may see (its own and its user's persona): the base of a document frequency.
        Counted over the shard, another tenant's memories pruned words out of a user's recall, and counted over
        the user, a sibling agent's, which this agent may not read, did (both told by the results what they
        hold)."""
        return int(self._conn.execute(_DOCUMENTS, [scope.tenant_id, scope.workspace_id, scope.user_id,
                                                   scope.agent_id]).fetchone()[0])

    def term_frequency(self, term: str, scope: Scope) -> int:
        """Memories ``scope``'s agent may see whose content holds ``term`` as the word index tokenizes it
        (stemmed)."""
        visible = visible_token(scope)
        return int(self._conn.execute(_TERM_DOCUMENTS, [f"content : {_phrase(term)} AND scope_terms : {visible}"]
                                      ).fetchone()[0])
