"""A long query costs one term-count statement per distinct word, and one FTS5 OR branch per word: nothing bounds
the terms of a query but its 65,536 characters.

``Retriever._words`` (altm/recall/retrieval/_engine.py:219) prunes ``query_terms(query)`` (every distinct
word, altm/recall/retrieval/_engine.py:132-141) with ``TermStatistics.prune``, which counts each term with its own
``SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'content : "t" AND scope_terms : …'``
(altm/recall/retrieval/_terms.py:84, altm/store/_search.py:242-247): a doclist read over the whole shard, other
tenants' postings included. Then the word and trigram channels match an OR of every kept term. ``prepare_turn``
recalls with the turn's content (up to 64 KiB: a pasted log or file). Measured (red team rt21), a 65,000-character
query: 220 / 290 / 800 ms (fresh Zipf words) on stores of 2k / 8k / 32k memories, 400-870 ms for distinct
identifiers, 190-280 ms for a user with 30 memories beside a big one: on the event loop.

Expected: a query's terms are bounded (as drilldown's 64), so a read's statements do not grow with its length."""

from __future__ import annotations

from altm.core import Settings, partition_for
from altm.recall import MAX_QUERY_TERMS, query_terms
from tests.support.memories import store_with
from tests.support.sqlite_work import statements
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(i, f"Deploy note {i}: the billing worker retried invoice {i}.", session="s1") for i in range(20)]


def _query(words: int) -> str:
    return "billing invoice " + " ".join(f"zq{i}x" for i in range(words))


async def test_a_querys_statements_do_not_grow_with_its_distinct_words(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (_rt, app):
        conn = app.recall.retriever.shards.get(partition_for(SCOPE.home, s.partitions))._db
        counts = []
        for words in (60, 3000):
            with statements(conn) as ran:
                hits = app.search(SCOPE, "s1", _query(words)).hits
            assert hits
            counts.append(ran.n)
    assert counts[1] <= 2 * counts[0], (
        f"a query of 62 → 3,002 distinct words ran {counts[0]} → {counts[1]} SQL statements: one term count per word")


async def test_a_question_after_a_long_paste_keeps_its_words(settings: Settings) -> None:
    """Past ``MAX_QUERY_TERMS`` distinct words, the first and the last halves are asked: a question after a
    pasted log still finds what it asks about."""
    s = settings.model_copy(update={"embedder": "none"})
    paste = " ".join(f"zq{i}x" for i in range(3000))
    assert len(query_terms(f"{paste} billing invoice")) == MAX_QUERY_TERMS
    assert query_terms(f"{paste} billing invoice")[-2:] == ["billing", "invoice"]
    async with store_with(s, TURNS) as (_rt, app):
        hits = app.search(SCOPE, "s1", f"{paste} What did the billing worker retry?").hits
    assert hits and "billing worker" in hits[0].content
