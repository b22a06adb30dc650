"""A reviewer who rejected a memory and then approves it (a mistaken rejection corrected) gets a memory that is
``verified`` by ground truth yet still ``lc_state='rejected'``: out of recall for good.

``_review_memory`` sets ``lc_state`` to ``rejected`` on a rejection but, on an approval, keeps whatever
``lc_state`` the row had, the rejection's included. The approved memory is never recalled (the current-view
policy filters ``lc_state NOT IN ('rejected', 'forgotten')``), never shown in the review queue (it filters
``rejected`` too), and nothing short of an erasure changes it: the reviewer's approval is silently lost. The
same approval given first (no rejection before it) leaves the memory active and recalled.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = "SELECT memory_id, trust_status, trust_method, lc_state FROM memories WHERE layer='L2' AND content=?"
SAID = "Our deploy day is Tuesday."


async def test_an_approval_after_a_rejection_brings_the_memory_back_into_recall(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        (atom,) = rows(s.data_dir, _SQL, (SAID,))
        await app.review_decide(SCOPE, atom["memory_id"], "reject")
        await rt.run_until_idle()
        await app.review_decide(SCOPE, atom["memory_id"], "approve", note="rejected by mistake")
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, _SQL, (SAID,))
        visible = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L2")}  # the recall policy's view
    assert (after["trust_status"], after["trust_method"]) == ("verified", "ground_truth")
    assert after["lc_state"] != "rejected", after
    assert atom["memory_id"] in visible, visible
