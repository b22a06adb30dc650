"""A release an operator rolled back is made again when a reviewer rejects and approves back another atom of the
facet: the rolled-back release is in force while its record says rolled back, and no rollback can undo it any
more.

Finding: tea (day 0, s0), "coffee … now, actually" (day 1, s1), tea again (day 2, s2). A reviewer rejects the s0
atom: the tea facet moves onto the s2 atom and govern places it again after coffee, releasing it from coffee (a
``release`` decision R: ``Supersession.release``, altm/pipeline/processors/govern.py:289-293, applied by
``_release``, altm/pipeline/writer/ops/governance.py:93-107). An operator rolls R back (``altm governance
rollback``): tea is superseded by coffee again and R is recorded ``rolled_back``. A reviewer then rejects the
coffee atom (s1) and approves it back (a mistaken rejection corrected). The approval makes the coffee facet
current again and govern places it again (``_moved_facet``/``_replace``/``_place``, govern.py:101-108, 230-250,
266-300), proposing "tea no longer superseded by coffee" anew (govern.py:278-280: tea's first saying left, s2,
comes after coffee's). A proposal's id is its payload's (altm/pipeline/processors/_base.py:194-207), so it is R
itself, and ``supersede`` hands a release to ``_release`` before it asks ``_rolled_back`` (governance.py:57-60;
bd3a7fe and 00a3bc4 refuse a rolled-back supersede and merge, not a release): tea is released again, current beside
coffee. R's record gains no step (``record_decision`` inserts each step once), so a second rollback of R is
answered unchanged (governance.py:415-416): the operator's undo is lost for good.

Reproduction: embedded runtime, no embedder, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each derived before
the next; ``review_decide(s0 atom, "reject")``; ``rollback(R)``; ``review_decide(s1 atom, "reject")``, then
``"approve"``; ``rollback(R)`` again. Read the tea facet's ``superseded_by`` and the current statements.

Expected: tea stays superseded by coffee after the review round trip, as after the rollback (e.g. ``supersede``
answers ``unchanged`` for a release an operator rolled back, as it does for a supersession: the ``_rolled_back``
check before the ``release`` branch).
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."


def _tea_superseded_by(settings: Settings) -> str | None:
    facets = {str(r["memory_id"]): r for r in rows(
        settings.data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}
    (tea,) = [r for r in facets.values() if str(r["content"]).endswith(TEA)]
    newer = facets.get(str(tea["superseded_by"]))
    return None if newer is None else str(newer["content"]).split(": ", 1)[1]


async def test_a_review_does_not_redo_a_release_an_operator_rolled_back(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, TEA)]) as (rt, app):
        for turn in (said_on(1, COFFEE), said_on(2, TEA)):
            await rt.publish([turn])
            await rt.run_until_idle()
        atoms = {str(r["session_id"]): str(r["memory_id"]) for r in rows(
            s.data_dir, "SELECT memory_id, session_id FROM memories WHERE layer = 'L2'")}
        assert _tea_superseded_by(s) == COFFEE
        await app.review_decide(SCOPE, atoms["s0"], "reject")
        await rt.run_until_idle()
        assert _tea_superseded_by(s) is None
        (release,) = {str(r["decision_id"]) for r in rows(
            s.data_dir, "SELECT decision_id FROM governance_events WHERE decision = 'release'")}
        await app.rollback(SCOPE, release)  # the operator: tea is still replaced by coffee
        await rt.run_until_idle()
        assert _tea_superseded_by(s) == COFFEE
        for decision in ("reject", "approve"):  # a mistaken rejection of the coffee atom, corrected
            await app.review_decide(SCOPE, atoms["s1"], decision)
            await rt.run_until_idle()
        after_review = (_tea_superseded_by(s), current_statements(s.data_dir))
        await app.rollback(SCOPE, release)  # the operator tries again
        await rt.run_until_idle()
        after_second_rollback = _tea_superseded_by(s)
    # actual: (None, [COFFEE, TEA]) — released again under the rolled-back decision
    assert after_review == (COFFEE, [COFFEE]), after_review
    # actual: None — the decision reads rolled back, so the second rollback changes nothing
    assert after_second_rollback == COFFEE, after_second_rollback
