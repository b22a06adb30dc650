"""A small user's recall pays for every other tenant of its shard in the trigram channel.

``SearchQueries.trigrams`` (altm/store/_search.py:140-144, ``_MATCH`` at :77-79) matches ``memories_fts_tri`` with
the bare terms: the
trigram index has no scope column and its MATCH has no scope filter, so FTS5 finds, bm25-scores and sorts every
row of the shard holding the substring, and only then does the join to ``memories`` drop the other users' rows
(``_MATCH``'s ``{where}``). In ``fallback`` mode (the default) the channel runs whenever the word channel finds
fewer than ``top_k`` memories (altm/recall/retrieval/_engine.py:229-235): exactly the case of a new or small
user. Measured (red team rt21): a user with 30 memories beside one with 2k / 8k / 32k memories, trigram step for
"deadline" 0.98 / 5.1 / 20.8 ms, for "priya" 0.2 / 1.5 / 7.1 ms.

Expected: the work of one user's read does not grow with what other users of the shard hold. Schema 29 keeps
``scope_terms`` in the trigram index too, and the channel matches the reader's home inside the index."""

from __future__ import annotations

from altm.core import Settings, partition_for
from tests.support.memories import store_with
from tests.support.sqlite_work import vm_steps
from tests.support.turns import SCOPE, colocated_scope, make_turn

QUESTION = "What did Priya say about the rollout?"


async def _vm_steps(settings: Settings, others: int) -> int:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"others{others}"})
    other = colocated_scope(s.partitions)
    mine = [make_turn(i, f"The quokka offsite note {i}.", session="s1") for i in range(3)]
    theirs = [make_turn(100 + i, f"Priya reviewed the rollout of service {i} today.", scope=other,
                        session=f"x{i % 20}") for i in range(others)]
    async with store_with(s, [*mine, *theirs]) as (_rt, app):
        conn = app.recall.retriever.shards.get(partition_for(SCOPE.home, s.partitions))._db
        app.search(SCOPE, "s1", QUESTION)  # term statistics cached
        with vm_steps(conn) as steps:
            hits = app.search(SCOPE, "s1", QUESTION).hits
    assert all(h.scope == SCOPE.path for h in hits)  # isolation holds; only the cost leaks
    return steps.n


async def test_a_small_users_recall_does_not_pay_for_other_tenants_rows(settings: Settings) -> None:
    few, many = await _vm_steps(settings, 100), await _vm_steps(settings, 800)
    assert many <= 2 * few, (
        f"the same read of a 3-memory user ran {few} → {many} VM steps (×{many / few:.1f}) with 100 → 800 rows "
        "of another tenant in its shard: the trigram channel scores every row of the shard")
