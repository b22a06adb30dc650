"""A page of a user's memories (``GET /v1/memories``, the memory browser, ``altm memories``) sorts every memory the
user's scope may see: the first page costs linear time (and a Python call per row) in the user's history.

``MemoryQueries.listing`` (altm/store/_queries.py:93) orders by ``m.valid_from, natural_key(<turn>), <role
rank>, m.memory_id`` where the turn is ``coalesce(json_extract(m.attributes, '$.turn_id'), m.source_id)``: no index
gives that order (EXPLAIN QUERY PLAN: ``SEARCH m USING INDEX memories_scope (tenant_id=? AND workspace_id=? AND
user_id=?)`` then ``USE TEMP B-TREE FOR ORDER BY``), so SQLite reads every row of the user, calls ``json_extract``
and the Python ``natural_key`` on each, sorts them all, and returns 50; ``OFFSET`` then walks past the skipped
rows. Measured (red team rt21), first page of 50, one user with 2k / 8k / 32k memories: 5.1 / 20.6 / 83.2 ms
(max 115 ms); with ``session_id`` (L2/L3 of every session still listed) 1.2 / 4.9 / 19.5 ms; a 30-memory user
beside them 0.3 ms.

Expected: a page costs about its own size (a stored, indexed conversation-order key; keyset pagination)."""

from __future__ import annotations

from altm.core import Settings, partition_for
from tests.support.memories import store_with
from tests.support.sqlite_work import vm_steps
from tests.support.turns import SCOPE, make_turn


async def _first_page_steps(settings: Settings, n: int) -> int:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"n{n}"})
    turns = [make_turn(i, f"Note {i} on the billing migration.", session=f"s{i % 10}") for i in range(n)]
    async with store_with(s, turns) as (_rt, app):
        conn = app.recall.retriever.shards.get(partition_for(SCOPE.home, s.partitions))._db
        with vm_steps(conn) as steps:
            page = app.list_memories(SCOPE, limit=10)
    assert len(page) == 10
    return steps.n


async def test_the_first_page_of_a_listing_does_not_sort_the_whole_history(settings: Settings) -> None:
    small, large = await _first_page_steps(settings, 100), await _first_page_steps(settings, 800)
    assert large <= 2 * small, (
        f"the first 10 memories of a user with 100 → 800 turns took {small} → {large} VM steps: every page sorts "
        "the user's whole history")
