"""Document frequencies per shard and the pruning of very common word terms."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from altm.core.settings import Settings
from altm.recall.retrieval import preset
from altm.recall.retrieval._terms import TermStatistics
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(tmp_path / "t.db")
    db.execute("CREATE TABLE memories (content TEXT)")
    db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(content, tokenize='porter unicode61')")
    rows = [("deploy the billing service",), ("deploy the canary",), ("deploy on friday",),
            ("billing invoice",), ("refund",)]
    db.executemany("INSERT INTO memories VALUES (?)", rows)
    db.executemany("INSERT INTO memories_fts VALUES (?)", rows)
    return db


def test_common_terms_are_left_out_keeping_the_rarest(conn: sqlite3.Connection) -> None:
    stats = TermStatistics()
    assert stats.frequency(conn, "p0", "deploying") == 3  # porter stemming, as in the word index
    assert stats.documents(conn, "p0") == 5
    # deploy is in 3/5 memories, billing in 2/5, refund in 1/5
    assert stats.prune(conn, "p0", ["deploy", "billing", "refund"], max_df=0.5, min_terms=1) == ["billing", "refund"]
    assert stats.prune(conn, "p0", ["deploy", "billing", "refund"], max_df=0.3, min_terms=2) == ["billing", "refund"]
    assert stats.prune(conn, "p0", ["deploy", "billing"], max_df=0.1, min_terms=1) == ["billing"]
    # nothing is pruned when pruning is off or too few terms are asked for
    assert stats.prune(conn, "p0", ["deploy", "billing"], max_df=1.0, min_terms=1) == ["deploy", "billing"]
    assert stats.prune(conn, "p0", ["deploy"], max_df=0.1, min_terms=1) == ["deploy"]


def test_counts_are_cached_until_they_expire(conn: sqlite3.Connection) -> None:
    stats = TermStatistics(ttl_s=3600)
    assert stats.frequency(conn, "p0", "refund") == 1
    conn.execute("INSERT INTO memories_fts VALUES ('another refund')")
    assert stats.frequency(conn, "p0", "refund") == 1  # cached
    assert stats.frequency(conn, "p1", "refund") == 2  # another shard key counts anew
    fresh = TermStatistics(ttl_s=0)
    assert fresh.frequency(conn, "p0", "refund") == 2
    small = TermStatistics(max_entries=2)
    for term in ("deploy", "billing", "refund"):
        small.frequency(conn, "p0", term)
    assert len(small._cache) == 2


async def test_a_query_of_only_common_terms_still_finds_memories(settings: Settings) -> None:
    turns = [make_turn(i, f"deploy note {i} about the service", session="s1") for i in range(1, 6)]
    turns.append(make_turn(6, "the service owner is Priya", session="s1"))
    async with store_with(settings, turns) as (_, app):
        result = app.recall.retriever.search(SCOPE, "s1", "deploy service Priya", preset("lexical"))
    assert result.hits and "Priya" in result.hits[0].content
