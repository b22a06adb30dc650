"""Two maintenance passes made at the same time over different memories are two events.

Found by the randomized replay check (seeds 237, 285): a compaction pass's control event was named by its
scope, kind and time alone, so a second pass at the same time, over memories stored since, had the first one's
event id. The source applied both; a replay took the second for a redelivery of the first, and the memories
only the second named were never compressed there. A pass is now named by what it does as well: the same
pass sent twice is still one event."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

LATER = T0 + timedelta(days=45)


async def test_a_second_compaction_at_the_same_time_compresses_what_it_names(settings: Settings,
                                                                             tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "We decided to deploy the billing service on Tuesdays.")]) as (rt, app):
        first = await app.admin.compaction(LATER)
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2")])
        await rt.run_until_idle()
        named = {str(r["memory_id"]) for r in app.admin.compaction_candidates(LATER)}
        second = await app.admin.compaction(LATER)
        await rt.run_until_idle()
        again = app.admin.compaction_candidates(LATER)
    assert first > 0 and second == len(named) > 0
    assert again == []  # the second pass was applied: nothing it named is left to compress
    compressed = {str(r["memory_id"]) for r in rows(s.data_dir, "SELECT memory_id FROM lifecycle_signals "
                                                    "WHERE kind = 'compress'")}
    assert named <= compressed
    await replayed_equal(s, tmp_path / "replayed")
