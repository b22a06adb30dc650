"""An anti-pattern a reviewer rejected is not one: the guard stops judging by it, and what it held for review
is judged again without it. Before, the guard's lookup dropped an unapproved tool's anti-pattern but not a
user's that a reviewer had rejected (contradicted, out of recall): a decision it re-asserted was still
refused, and a scene it held stayed held."""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
SAID = [make_turn(1, "I decided to use pickle for the session cache with Marco.", session="s1"),
        make_turn(2, "I decided to review the session cache with Marco on Friday.", session="s2")]
AGAIN = make_turn(4, "We decided to store the session cache with pickle.", session="s4")


async def test_a_rejected_anti_pattern_refuses_and_holds_nothing(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        for batch in (SAID, [make_turn(3, ANTI, session="s3")]):
            await rt.publish(batch)
            await rt.run_until_idle()
        held = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L3' AND content LIKE 'Scene: Marco%'")
        assert [r["trust_status"] for r in held] == ["uncertain"]
        (anti,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
        await deployment.app.review_decide(SCOPE, anti["memory_id"], "reject")
        await rt.run_until_idle()
        await rt.publish([AGAIN])
        await rt.run_until_idle()
    scene = rows(s.data_dir, "SELECT trust_status, trust_reason FROM memories WHERE layer='L3' "
                             "AND content LIKE 'Scene: Marco%'")
    assert [r["trust_status"] for r in scene] == ["unverified"], scene
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L2' AND content=?", (AGAIN.content,))
    assert not rows(s.data_dir, "SELECT reason FROM rejections WHERE reason LIKE '%anti-pattern%'")
