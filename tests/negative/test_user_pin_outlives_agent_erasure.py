"""A user's pin of a persona facet is lost when the agent whose scope the request named is erased.

An L4 facet belongs to the whole user; pinning one needs a user key (``access.Gate.curate``), yet every pin
request names a four-part scope, so the user pins from some agent's scope. The pin is a control event sealed
under that agent's data key (``sealing.owner_of``: only erasures stay in the clear, and only rollbacks and
review decisions — "a decision about the user's memories, whichever agent's scope the operator asked from" —
are sealed under the user's own key), and an erasure of that agent takes every use signal the agent "sent"
(``ShardTx.erase_records``), the user's pin with them.

Here agent ``reviewer`` hears "I prefer dark mode in every editor." (facet F, shared by every agent of dana);
dana pins F from the scope ``dana/coder``; later dana retires agent ``coder`` and erases it, which touches none of
F's evidence. F is no longer pinned, and the next L4 retention pass forgets the facet the user pinned.

Expected: a pin of an L4 facet is the user's decision, like a review or a rollback: it outlives an erasure of
the agent whose scope carried the request (sealed under the user's key, not taken by the agent's erasure), F
stays pinned through the erasure and the retention pass, and a replay of the log agrees.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
_FACETS = "SELECT memory_id, lc_pinned FROM memories WHERE layer='L4'"


async def test_a_pinned_facet_stays_pinned_when_the_agent_that_carried_the_pin_is_erased(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    turns = [make_turn(1, "I prefer dark mode in every editor.", session="b", scope=REVIEWER),
             make_turn(2, "We decided to deploy the billing service on Tuesdays.", session="a")]
    async with store_with(s, turns) as (rt, app):
        (facet,) = app.list_memories(SCOPE, layer="L4")
        mid = str(facet["memory_id"])
        await app.feedback(SCOPE, [mid], "pin")  # dana (a user key) pins the facet from coder's scope
        await rt.run_until_idle()
        assert rows(s.data_dir, _FACETS) == [{"memory_id": mid, "lc_pinned": 1}]
        await app.erase(SCOPE, "agent")  # coder goes; F stands on reviewer's atom alone
        await rt.run_until_idle()
        after_erasure = rows(s.data_dir, _FACETS)
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
        after_retention = rows(s.data_dir, _FACETS)
    assert after_erasure == [{"memory_id": mid, "lc_pinned": 1}], ("the user's pin went with agent coder",
                                                                   after_erasure)
    assert after_retention == [{"memory_id": mid, "lc_pinned": 1}], ("retention forgot the facet the user pinned",
                                                                     after_retention)
    await replayed_equal(s, tmp_path / "replay")
