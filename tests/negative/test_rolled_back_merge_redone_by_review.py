"""A reviewer's approval of an atom folds into it again an exact duplicate whose merge an operator rolled back:
the rolled-back merge is in force while its record says rolled back, and no rollback can undo it any more.

Finding: a fact said in two sessions (s0, s1) is two atoms; govern folds the s1 atom into the s0 one (a merge
decision). An operator rolls that merge back (``altm governance rollback``): the s1 atom is its own memory again,
and the decision is recorded ``rolled_back``. A reviewer then approves the s0 atom (it is verified: a routine
review of a memory, nothing about the duplicate). Since 5267d0a govern takes every committed review change of an
atom nobody rejected as one whose duplicates "fold into the earliest of them again" (``_reviewed_atom``,
altm/pipeline/processors/govern.py:86-93, called at :160-161) and proposes the merge of the s1 atom into the s0
one anew; a proposal's id comes from its op and payload alone (altm/pipeline/processors/_base.py:194-207), so it
is the very decision the operator rolled back, and the writer's ``merge`` (altm/pipeline/writer/ops/
governance.py:134-155) has no check for a rolled-back decision (``supersede`` got one in bd3a7fe, :59-60): the s1
atom is folded again. The decision stays recorded ``rolled_back`` (``record_decision`` adds no step under an id
it holds), so a second ``governance rollback`` of it is answered unchanged (governance.py:402-403): the
operator's undo is lost for good. Before 5267d0a a review proposed no merge, and the s1 atom stayed its own.

Reproduction: embedded runtime, no embedder, "Our deploy day is Tuesday." said alone on day 0 (s0) and day 1
(s1); ``rollback(merge decision)``; ``review_decide(s0 atom, "approve")``; ``rollback(merge decision)`` again.
Read the s1 atom's ``superseded_by``.

Expected: the s1 atom stays unmerged after the approval, as after the rollback (e.g. ``merge`` answers
``unchanged`` for a decision rolled back, as ``supersede`` does, or govern folds again only the duplicates a
rejection released, not on every review).
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.facets import said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

FACT = "Our deploy day is Tuesday."


def _folded_into(settings: Settings) -> dict[str, object]:
    return {str(r["session_id"]): r["superseded_by"] for r in rows(
        settings.data_dir, "SELECT session_id, superseded_by FROM memories WHERE layer = 'L2'")}


async def test_an_approval_does_not_redo_a_merge_an_operator_rolled_back(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, FACT), said_on(1, FACT)]) as (rt, app):
        atoms = {str(r["session_id"]): str(r["memory_id"]) for r in rows(
            s.data_dir, "SELECT memory_id, session_id FROM memories WHERE layer = 'L2'")}
        assert _folded_into(s) == {"s0": None, "s1": atoms["s0"]}
        (merge,) = {str(r["decision_id"]) for r in rows(
            s.data_dir, "SELECT decision_id FROM governance_events WHERE decision = 'merge'")}
        await app.rollback(SCOPE, merge)
        await rt.run_until_idle()
        assert _folded_into(s) == {"s0": None, "s1": None}
        await app.review_decide(SCOPE, atoms["s0"], "approve")
        await rt.run_until_idle()
        after_approval = _folded_into(s)
        await app.rollback(SCOPE, merge)  # the operator tries again
        await rt.run_until_idle()
        after_second_rollback = _folded_into(s)
    # actual: {"s0": None, "s1": <the s0 atom>} — folded again under the rolled-back decision
    assert after_approval == {"s0": None, "s1": None}, after_approval
    # actual: still folded — the decision reads rolled back, so the second rollback changes nothing
    assert after_second_rollback == {"s0": None, "s1": None}, after_second_rollback
