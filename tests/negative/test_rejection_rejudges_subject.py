"""A reviewer's rejection does not re-judge the rejected atom's subject group: the rejected atom keeps shaping
the verdicts verify gave the other atoms before the review.

180fcdd leaves a rejected atom out of the group *when verify next runs*, but verify only runs on an upsert (or
an erasure) of an atom of that subject, never on a review. So:

* support: "Our deploy day is Tuesday." (A) and "Yes, the deploy day is Tuesday as always." (B) verify each
  other. A reviewer rejects A. B stays ``verified`` ("1 other memory ... agree"), its only support a rejected
  memory. Had the reviewer rejected A before B was said, B would be ``unverifiable``
  (test_review_outranks_verify): the verdict depends on arrival order, not on the input set.
* contradiction: "Our deploy day is Tuesday." (A), then "Actually, the deploy day is Thursday now." (T) marks A
  ``contradicted`` by T. The reviewer rejects T (the correction was wrong). A stays ``contradicted`` naming the
  rejected T: recall keeps down-weighting (×0.6) and flagging the correct fact, and the review queue keeps
  showing it as contradicted by a memory the reviewer threw out, until the user happens to mention the deploy
  day again.

The trust sweep does not heal either: it skips rows changed only by verify or review.
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, content, trust_status, trust_method, trust_reason, trust_contradicting_id, lc_state "
        "FROM memories WHERE layer='L2' ORDER BY valid_from")
FIRST = "Our deploy day is Tuesday."


@pytest.mark.parametrize(("second", "rejected", "kept"), [
    ("Yes, the deploy day is Tuesday as always.", 0, 1),  # support: A rejected, B was verified by A
    ("Actually, the deploy day is Thursday now.", 1, 0),  # contradiction: T rejected, A was contradicted by T
], ids=["support", "contradiction"])
async def test_a_rejection_takes_the_rejected_atom_out_of_the_others_verdicts(
        settings: Settings, second: str, rejected: int, kept: int) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, text in enumerate((FIRST, second), 1):
            await rt.publish([make_turn(i, text, session=f"s{i}")])
            await rt.run_until_idle()
        before = rows(s.data_dir, _SQL)
        assert before[kept]["trust_status"] in ("verified", "contradicted"), before  # judged with the other
        await app.review_decide(SCOPE, before[rejected]["memory_id"], "reject")
        await rt.run_until_idle()
        await app.admin.sweep()  # the periodic trust sweep does not repair it either
        await rt.run_until_idle()
        after = rows(s.data_dir, _SQL)
    assert (after[rejected]["trust_status"], after[rejected]["lc_state"]) == ("contradicted", "rejected")
    other = after[kept]
    # the rejected atom neither supports nor contradicts anything: the other stands alone on its subject
    assert other["trust_contradicting_id"] != after[rejected]["memory_id"], other
    assert other["trust_status"] == "unverifiable", other
