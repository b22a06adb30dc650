"""How recall ranks a user's own memories depends on what other tenants stored in the same shard.

Finding: the word and trigram channels rank with FTS5's ``bm25()`` (``SearchQueries.words`` / ``trigrams`` →
``_match``, altm/store/_search.py:129-150). The ``scope_terms`` filter (``ScopePolicy.fts_filter``,
altm/store/_policy.py:78) restricts *which rows* are scored, but bm25's statistics are the whole FTS table's:
the inverse document frequency of each term (rows of the table holding it) and the average document length
(every row of the table). A shard holds every user whose home hashes to its partition, of every tenant. So
another tenant's memories change the scores, and the order, of a user's own memories — the same class of
defect as ``test_term_pruning_across_tenants.py`` (fixed by counting term statistics over the user's own
memories, ``SearchQueries.document_count`` / ``term_frequency``), reached through bm25 itself. README
("Benchmarks") says "bm25 scores only admissible memories": it scores them with statistics of memories that
are not admissible.

It is an oracle as well as a ranking defect: the partition function is public (murmur2 of
``tenant/workspace/user``), a tenant can pick user ids that share a victim's shard, store two memories of its
own ("falcon ..." / "heron ..., heron") and query both words: its "falcon" memory comes first exactly when
the other users of the shard often say "heron" (its IDF fell). Each query tells it whether a word of its
choosing (a project code name, a customer, a person) is common in other tenants' memories, and every hit's
``channels`` (the channel ranks) and ``score`` in ``POST /v1/query`` show it.

Reproduction: the same two memories of ``acme/platform/dana/coder``, once alone and once beside twelve memories
of a ``globex`` user on the same shard that say "heron"; the query "falcon heron" ranks them in the opposite
order.

Expected: a user's recall (order, channel ranks, scores) does not depend on any other user's data; bm25's
document frequencies and average length are those of the scope's home (e.g. score the candidates the scoped
``MATCH`` returns with the home's counts, which ``TermStatistics`` already keeps, or keep a word index per home).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Scope, Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, colocated_scope, make_turn

MINE = [make_turn(1, "The falcon report is ready for review.", session="s1"),
        make_turn(2, "The heron report is ready for review, heron.", session="s1")]
QUERY = "falcon heron"


async def _ranking(settings: Settings, data_dir: Path, theirs: list[Scope]) -> list[tuple[str, str, int | None]]:
    others = [make_turn(10 + i, f"Heron sighting number {i} near the lake today.", scope=scope, session="x")
              for i, scope in enumerate(theirs)]
    s = settings.model_copy(update={"embedder": "none", "data_dir": data_dir})
    async with store_with(s, [*MINE, *others]) as (_rt, app):
        hits = app.search(SCOPE, "s1", QUERY, top_k=10).hits
    return [(h.memory_id, h.content, h.channels.get("fts")) for h in hits]


@pytest.mark.xfail(strict=True, reason=(
    "known gap (README, Reliability: hostile input): FTS5's bm25 takes its document frequencies and average length "
    "from the whole index of the shard; scoring the scoped candidates with the agent's own counts needs each "
    "candidate's term frequencies and length, which SQLite's Python binding cannot read through an FTS5 ranking "
    "function"))
async def test_another_tenants_memories_do_not_reorder_a_users_recall(settings: Settings, tmp_path: Path) -> None:
    alone = await _ranking(settings, tmp_path / "alone", [])
    assert {content for _, content, _ in alone} >= {t.content for t in MINE}
    beside = await _ranking(settings, tmp_path / "beside", [colocated_scope(settings.partitions)] * 12)
    assert [(m, c) for m, c, _ in beside if c in {t.content for t in MINE}] == \
        [(m, c) for m, c, _ in alone if c in {t.content for t in MINE}], (
        f"another tenant's memories reordered this user's recall: alone {alone}, beside {beside}")
    assert beside == alone, f"channel ranks changed with another tenant's data: alone {alone}, beside {beside}"
