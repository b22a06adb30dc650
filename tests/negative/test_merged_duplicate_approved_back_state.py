"""An exact duplicate folded into its canonical atom, rejected by a reviewer and approved back, ends ``active``
while it is still folded into the canonical (``superseded_by`` names it): a state no other path gives a row.

Finding (a review of the sixth session's fixes, round 13, as predating them): ``_reviewed_state``
(altm/pipeline/writer/ops/governance.py) gives a memory approved after a rejection the state its weight gives
(``state_by_weight``: ``active`` or the like) and does not look at ``superseded_by``: a duplicate that was ``merged``
before the rejection comes back ``active`` though the merge still stands (``superseded_by`` = the canonical atom).
Recall and the counts read ``lc_state``: ``altm stats`` counts it as an active memory, and the same two reviews
leave a row other than the untouched store's.

Reproduction: model-free; the same fact said in sessions s0 and s1 (the s1 atom folds into the s0 one); reject the
s1 atom, approve it back.

Expected: the duplicate is ``merged`` again, folded into the same canonical atom, as before the two reviews.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.facets import said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

FACT = "Our deploy day is Tuesday."


async def test_a_merged_duplicate_approved_back_is_merged_again(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, FACT), said_on(1, FACT)]) as (rt, app):
        def atom(session: str) -> dict[str, object]:
            (row,) = rows(s.data_dir, "SELECT memory_id, lc_state, superseded_by FROM memories WHERE layer = 'L2' "
                                      "AND session_id = ?", (session,))
            return row

        before = atom("s1")
        assert before["lc_state"] == "merged" and before["superseded_by"] == atom("s0")["memory_id"]
        for decision in ("reject", "approve"):
            await app.review_decide(SCOPE, str(before["memory_id"]), decision)
            await rt.run_until_idle()
        after = atom("s1")
    assert after["superseded_by"] == before["superseded_by"]
    assert after["lc_state"] == "merged", after  # before the fix: 'active'
