"""A merge whose rollback an operator rolled back is in force again, yet is refused for good once a review
releases it: a reject-then-approve of the canonical atom leaves the exact duplicate unmerged, where the same
reviews with neither rollback fold it in again.

Finding: a fact said in two sessions (s0, s1) is two atoms; govern folds the s1 atom into the s0 one (merge
decision D). An operator rolls D back (rollback R1: the s1 atom is its own memory again), then rolls R1 back
(R2: a mistaken undo undone; ``rollback`` restores R1's audit rows, altm/pipeline/writer/ops/governance.py:
408-447, and the s1 atom is folded into the s0 one again). D's record keeps the ``rolled_back`` step R1 added
(``record_decision`` at governance.py:449 writes governance_events, which no rollback restores: they are not
audited, altm/store/_tx/__init__.py:31-44). A reviewer then rejects the s0 atom (its duplicates are released,
governance.py:226-227) and approves it back; govern proposes D anew (``_reviewed_atom``/``_merge_duplicates``,
altm/pipeline/processors/govern.py:86-93, 160-161; a proposal's id is its payload's, so it is D), and since
00a3bc4 ``merge`` answers UNCHANGED for any decision that ever had a ``rolled_back`` step (``_rolled_back``,
governance.py:134-137, checked at :143-144). The operator's last word (R2: merged) is lost: the s1 atom stays a
separate duplicate in recall, and no governance command can fold it again (rolling R2 back does the opposite,
D itself answers "already rolled back").

Reproduction: embedded runtime, no embedder, "Our deploy day is Tuesday." said alone on day 0 (s0) and day 1
(s1); ``rollback(D)``; ``rollback(R1)``; ``review_decide(s0 atom, "reject")``; ``review_decide(s0 atom,
"approve")``. In a second data dir the same without the two rollbacks. Read the s1 atom's ``superseded_by``.

Expected: as without the two rollbacks: the s1 atom folded into the s0 one (e.g. a decision is refused only
while its last rollback stands: ``_rolled_back`` looks at whether the rollback that rolled it back was itself
rolled back, or a rollback of a rollback removes the ``rolled_back`` step it restored past).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

FACT = "Our deploy day is Tuesday."


def _folded_into(settings: Settings) -> dict[str, object]:
    atoms = {str(r["memory_id"]): str(r["session_id"]) for r in rows(
        settings.data_dir, "SELECT memory_id, session_id FROM memories WHERE layer = 'L2'")}
    return {str(r["session_id"]): atoms.get(str(r["superseded_by"])) for r in rows(
        settings.data_dir, "SELECT session_id, superseded_by FROM memories WHERE layer = 'L2'")}


def _decisions(settings: Settings, decision: str) -> set[str]:
    return {str(r["decision_id"]) for r in rows(
        settings.data_dir, "SELECT decision_id FROM governance_events WHERE decision = ?", (decision,))}


async def _reviewed_back(settings: Settings, *, undo_undone: bool) -> dict[str, object]:
    async with store_with(settings, [said_on(0, FACT), said_on(1, FACT)]) as (rt, app):
        assert _folded_into(settings) == {"s0": None, "s1": "s0"}
        if undo_undone:
            (merge,) = _decisions(settings, "merge")
            await app.rollback(SCOPE, merge)
            await rt.run_until_idle()
            assert _folded_into(settings) == {"s0": None, "s1": None}
            (undo,) = _decisions(settings, "rollback")
            await app.rollback(SCOPE, undo, "the merge was right after all")
            await rt.run_until_idle()
            assert _folded_into(settings) == {"s0": None, "s1": "s0"}  # the merge is in force again
        (first,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's0'")
        for decision in ("reject", "approve"):
            await app.review_decide(SCOPE, str(first["memory_id"]), decision)
            await rt.run_until_idle()
    return _folded_into(settings)


async def test_a_merge_restored_by_a_rollback_of_its_rollback_folds_again_after_review(settings: Settings,
                                                                                    tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none"})
    plain = await _reviewed_back(base.model_copy(update={"data_dir": tmp_path / "plain"}), undo_undone=False)
    assert plain == {"s0": None, "s1": "s0"}, plain
    restored = await _reviewed_back(base.model_copy(update={"data_dir": tmp_path / "restored"}), undo_undone=True)
    # actual: {"s0": None, "s1": None} — D reads rolled back although its rollback was rolled back
    assert restored == plain, restored
