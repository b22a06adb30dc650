"""A review decision on a memory that a retention pass forgot meanwhile files a new review item.

Finding: the review queue lists a contradicted atom; the reviewer decides on it, but a retention pass published
just before the decision forgets the atom first. ``_review_memory``
(``altm/pipeline/writer/ops/governance.py:121-124``) looks the atom up with ``target_row``
(``altm/pipeline/writer/ops/_base.py:70-79``), which treats a missing memory as *erased* (void) only when a
tombstone names it, and otherwise raises ``Rejection`` ("no reviewed memory ... in scope home"). A forget leaves
no tombstone by default (``ALTM_RETENTION_TOMBSTONES`` is off), so the decision is filed as a rejection, which
the review queue lists as a new pending item: a review item about a memory that no longer exists, which no
decision can resolve in any meaningful way, and the admin's outcome reads "rejected" although the memory the
reviewer wanted gone is gone. The writer already treats the same race for use signals as void
(``altm/pipeline/writer/ops/lifecycle.py:28-31``: "a retention pass forgot it while a cycle that showed it was
open: void, as on an erased memory (a rejection would be a review item nobody can act on)"); review decisions
were left out.

Reproduction: "The deadline is December 15." (T0) contradicted by "Actually, the deadline is January 10, not
December 15." (T0 + 20 days); with ``retention_days_l2=30`` the reviewer reads the queue, then
``admin.retention(T0 + 40 days)`` and the reviewer's ``review_decide(..., "reject")`` are published in that
order and derived.

Expected: the decision on a memory retention forgot is void, as a signal on one is: its outcome is not
``rejected``, and the review queue holds no rejection for it (the queue is empty afterwards).
"""

from __future__ import annotations

from datetime import timedelta

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

SAID = "The deadline is December 15."
CORRECTED = "Actually, the deadline is January 10, not December 15."


async def test_a_review_decision_on_a_memory_retention_forgot_is_void(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0})
    later = make_turn(2, CORRECTED, session="s2").model_copy(update={"timestamp": T0 + timedelta(days=20)})
    async with store_with(s, [make_turn(1, SAID, session="s1"), later]) as (rt, app):
        (item,) = app.review_queue(SCOPE)["memories"]
        assert item["content"] == SAID and item["trust_status"] == "contradicted", item
        await app.admin.retention(T0 + timedelta(days=40))  # published before the reviewer's decision
        request = await app.admin.review_decide(SCOPE, str(item["item_id"]), "reject")
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE memory_id = ?", (item["memory_id"],)) == []
        outcome = app.admin.outcome(request)
        queue = app.review_queue(SCOPE)
    assert outcome.status != "rejected", outcome
    assert queue["rejections"] == [], ("the decision became a review item about a forgotten memory",
                                       queue["rejections"])
