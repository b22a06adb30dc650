"""A user's review queue read every rejection of its shard, every tenant's: ``ReviewQueries.queue``
(altm/store/_queries.py) filters ``rejections`` by ``json_extract(payload, '$.scope…')`` with no index on it, so
each listing parsed every payload of the shard (red team rt24: 100 / 400 / 1,600 rejections of another tenant ->
760 / 2,860 / 11,260 VM steps for one listing of a user with none). Schema 27 indexes rejections by the scope
their payload names (and held actions by their user and status)."""

from __future__ import annotations

from altm.core import Settings, partition_for
from tests.support.memories import store_with
from tests.support.sqlite_work import vm_steps
from tests.support.turns import SCOPE, colocated_scope, make_turn


async def _vm_steps(settings: Settings, refused: int) -> int:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"refused{refused}"})
    other = colocated_scope(s.partitions)
    mine = [make_turn(i, f"The quokka offsite note {i}.", session="s1") for i in range(3)]
    # the same turn sent again with other content: each re-send is a rejection kept for review
    theirs = [make_turn(1, f"variant {i} of the first message", scope=other, session="x") for i in range(refused)]
    async with store_with(s, [*mine, *theirs]) as (_rt, app):
        conn = app.recall.retriever.shards.get(partition_for(SCOPE.home, s.partitions))._db
        with vm_steps(conn) as steps:
            queue = app.review_queue(SCOPE)
        theirs_queue = app.review_queue(other)
    assert queue["rejections"] == []  # isolation holds; only the cost leaks
    assert len(theirs_queue["rejections"]) == min(refused - 1, 50)
    return steps.n


async def test_a_users_review_queue_does_not_read_other_tenants_rejections(settings: Settings) -> None:
    few, many = await _vm_steps(settings, 100), await _vm_steps(settings, 800)
    assert many <= 2 * few, (
        f"one review listing of a user with no rejections ran {few} → {many} VM steps (×{many / few:.1f}) with "
        "100 → 800 rejections of another tenant in its shard")
