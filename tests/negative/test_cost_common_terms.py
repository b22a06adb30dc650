"""A query of two common words scores every memory of the user holding either: the word channel is linear in
the user's history, and the ``conversation`` preset's p95 passes 50 ms on one user of 32k memories.

``SearchQueries._match`` (altm/store/_search.py:146-151, ``_MATCH`` at :77-79) asks
``ORDER BY bm25(...) LIMIT ?``; FTS5 computes bm25
for every row matching the expression (each one a ``%_docsize`` lookup: 33,501 statements for one 2-word query at
32k) and sorts them. ``TermStatistics.prune`` (altm/recall/retrieval/_terms.py:79, 87-88) leaves a query of
``min_terms`` (2) words or fewer alone, and otherwise keeps the 2 rarest whatever their frequency, so nothing bounds
the rows scored. Measured (red team rt21), "deadline billing", preset ``conversation``, one user with 2k / 8k / 32k
memories: median 7.8 / 23.3 / 90.3 ms, p95 9.5 / 29.1 / 111 ms (6 Zipf words: p95 5.7 / 13.3 / 50.1 ms in a
quiet moment, 21.7 / 31.7 / 190 ms beside other jobs).

Expected: the rows a word query scores are bounded (a document-frequency ceiling in absolute terms, or a
candidate cap — newest rows by rowid, or a per-term impact-ordered prefix — before bm25).

Now a preset's ``max_scored`` (2,000 by default) bounds them: a query whose terms the user's memories hold more
often than that scores the newest that many rows matching. The test sets it to 100, below its larger store."""

from __future__ import annotations

import pytest

from altm.core import Settings, partition_for
from altm.recall.retrieval import PRESETS
from tests.support.memories import store_with
from tests.support.sqlite_work import statements
from tests.support.turns import SCOPE, make_turn


@pytest.fixture(autouse=True)
def _scored_at_most_100(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PRESETS, "conversation", PRESETS["conversation"].model_copy(update={"max_scored": 100}))


async def _statements(settings: Settings, n: int) -> tuple[int, list[str]]:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"n{n}"})
    turns = [make_turn(i, f"The deadline for billing item {i} moved.", session=f"s{i % 20}") for i in range(n)]
    async with store_with(s, turns) as (_rt, app):
        conn = app.recall.retriever.shards.get(partition_for(SCOPE.home, s.partitions))._db
        app.search(SCOPE, "s1", "deadline billing", preset_name="conversation")  # term statistics cached
        with statements(conn) as count:
            hits = app.search(SCOPE, "s1", "deadline billing", preset_name="conversation").hits
    assert len(hits) == 10
    return count.n, [h.content for h in hits]


async def test_a_common_word_query_scores_a_bounded_number_of_rows(settings: Settings) -> None:
    (small, _), (large, found) = await _statements(settings, 100), await _statements(settings, 800)
    # the newest matching rows are the ones scored: the hits are among the last 100 turns said
    assert all(int(c.split("item ")[1].split()[0]) >= 700 for c in found), found
    assert large <= 2 * small, (
        f"'deadline billing' over 100 → 800 of the user's messages ran {small} → {large} statements: bm25 scores "
        "every matching row")
