"""Listing memories page by page: turn 10 is listed before turn 3, and the operator's listing (no scope) with a
limit shows turns 10-12 in place of turns 3-5 (with an offset: some memories twice, others never).

Finding: ``MemoryQueries.listing`` (altm/store/_queries.py:82-89) lets SQLite choose the page with
``ORDER BY m.valid_from, m.source_id, <role rank>, m.memory_id LIMIT ? OFFSET ?``, which compares the turn ids
as text ("s1-t10" < "s1-t2"), and only then sorts the chosen rows by ``conversation_key``
(altm/store/_conversation.py:24-27), which compares them in their natural order ("s1-t2" < "s1-t10"). The two
orders differ for every session whose messages share one time (a host that knows only when a session happened:
the case the commit names), so

- with a scope, the page boundaries are cut in text order: page 1 of 5 holds t1, t2, t10, t11, t12 and page 2
  t3..t7 (the listing the HTTP API and the browser page through is not oldest first / in conversation order);
- with no scope (``altm memories`` without ``--scope``, altm/interfaces/cli/inspect.py:98), each shard gives
  its first ``limit + offset`` rows in text order and the merge re-sorts them naturally: ``limit=5`` shows
  t1, t2, t10, t11, t12 (t3-t5 are not the oldest 5), and ``offset=5`` repeats t10-t12 while t3-t5 are on no page.

Reproduction: one session of 12 user messages sent with one timestamp (turn ids s1-t1..s1-t12), no embedder;
list with ``limit=5`` at offsets 0, 5, 10, with and without a scope.

Expected: the pages, put one after another, are the whole listing in conversation order (t1, t2, ..., t12):
every memory on exactly one page, ``limit=5`` the first five. (Fix: order in SQL by the same key, e.g. a
deterministic ``natural_key`` SQL function over ``source_id``, or read each boundary time's rows whole.)
"""

from __future__ import annotations

from typing import Any

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0

TURNS = [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"s1-t{i}", role=Role.USER,
                   content=f"Deployment note number {i} for the billing service.", timestamp=T0)
         for i in range(1, 13)]
IN_ORDER = [f"s1-t{i}" for i in range(1, 13)]


def _turn_ids(rows: list[dict[str, Any]]) -> list[str]:
    return [str(r["source_id"]) for r in rows]


async def test_pages_of_one_session_follow_conversation_order(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (_rt, app):
        whole = _turn_ids(app.list_memories(SCOPE, layer="L0", limit=100))
        assert whole == IN_ORDER, whole  # one page: in conversation order
        paged = [_turn_ids(app.list_memories(SCOPE, layer="L0", limit=5, offset=o)) for o in (0, 5, 10)]
    assert [t for page in paged for t in page] == IN_ORDER, f"pages {paged}"


async def test_operator_listing_pages_hold_each_memory_once(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (_rt, app):
        recall = app.recall
        assert _turn_ids(recall.list_memories(None, layer="L0", limit=100)) == IN_ORDER
        first = _turn_ids(recall.list_memories(None, layer="L0", limit=5))
        paged = [_turn_ids(recall.list_memories(None, layer="L0", limit=5, offset=o)) for o in (0, 5, 10)]
    assert first == IN_ORDER[:5], f"the oldest five: {first}"
    assert [t for page in paged for t in page] == IN_ORDER, f"pages {paged}"
