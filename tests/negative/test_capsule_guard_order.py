"""Found by a randomized replay check: a session's capsule that re-asserts an anti-pattern stated in another
session was refused when the anti-pattern reached the writer first and stored when the capsule did. Fold and
extract are separate stages, so that order depends on batching, and a replay batches the log differently from
the live run: the source kept one rejection per version of the capsule (each message folded it again), the
replay stored the capsule. Now a capsule that re-asserts an anti-pattern is held for review in either order."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import running
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import make_turn

ANTI = "Never use PostgreSQL for billing because it loses data."
REASSERT = "We decided to use PostgreSQL for billing in production."


async def test_a_capsule_re_asserting_an_anti_pattern_replays_to_the_same_state(settings: Settings,
                                                                                tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as runtime:
        for turns in ([make_turn(1, ANTI, session="s0")], [make_turn(2, REASSERT)],
                      [make_turn(3, "The invoices table holds about two million rows.")],
                      [make_turn(4, "Let's look at the refund batch next week.")]):
            await runtime.publish(turns)
            await runtime.run_until_idle()
    held = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L1' AND session_id='s1'")
    assert [r["trust_status"] for r in held] == ["uncertain"], held
    assert rows(s.data_dir, "SELECT 1 FROM rejections WHERE memory_id IN (SELECT memory_id FROM memories)") == []
    await replayed_equal(s, tmp_path / "replayed")
