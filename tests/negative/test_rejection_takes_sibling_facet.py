"""A reviewer's rejection of one agent's atom takes the persona facet that a sibling agent's atom states too.

The user tells the ``coder`` agent "I prefer tabs over spaces in Python." (session a1) and later tells the
``writer`` agent the same (session b1): one atom per agent, one user-wide facet (L4) citing the earliest atom,
the coder's (altm/pipeline/processors/govern.py:200-206). A reviewer rejects the coder's atom (it was said about
someone else in that conversation). ``_facets_following`` (altm/pipeline/writer/ops/governance.py:171-197) looks
only at the atoms the facet *cites*: none is left unrejected, so the facet is taken out of recall
(``lc_state='rejected'``, "its evidence was rejected by a reviewer"), although the writer's atom of the same
statement, which nobody rejected, stands. Nothing proposes the facet again from the writer's atom: govern is not
asked (a review recomputes scenes, not facets). And when the user tells the writer again, the re-statement is
an exact duplicate of the writer's own atom, which govern merges (``_atom`` returns the merge alone, no facet),
so the facet stays out for good: the re-statement path of ``test_facet_restated.py`` does not apply.

What a user expects (README, Trust and erasure): "A persona facet whose atoms a reviewer rejected leaves recall
with them and comes back when one is approved", and "govern cites the earliest atom nobody rejected, so the
user's re-statement of the preference brings the facet back". Here not all of the facet's atoms were rejected:
the writer's was not, and the user even restated it. A store in which the reviewer never saw the coder's atom
(or in which the coder's atom were never made) has the facet from the writer's atom.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
SAID = "I prefer tabs over spaces in Python."
FACET = "Preference (tabs): I prefer tabs over spaces in Python."


async def test_rejecting_one_agents_atom_keeps_the_facet_a_sibling_agents_atom_states(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="a1")])
        await rt.run_until_idle()
        await rt.publish([make_turn(2, SAID, scope=WRITER, session="b1")])
        await rt.run_until_idle()
        assert sorted(r["content"] for r in app.list_memories(WRITER, layer="L4")) == [FACET]
        (coders,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND agent_id='coder' "
                                     "AND content=?", (SAID,))
        await app.review_decide(SCOPE, coders["memory_id"], "reject", note="said about a colleague")
        await rt.run_until_idle()
        writers = rows(s.data_dir, "SELECT lc_state FROM memories WHERE layer='L2' AND agent_id='writer' "
                                   "AND content=?", (SAID,))
        after_review = sorted(r["content"] for r in app.list_memories(WRITER, layer="L4"))
        await rt.publish([make_turn(3, SAID, scope=WRITER, session="b2")])  # the user says it to the writer again
        await rt.run_until_idle()
        after_restated = sorted(r["content"] for r in app.list_memories(WRITER, layer="L4"))
        facets = rows(s.data_dir, "SELECT lc_state, trust_reason, evidence FROM memories WHERE layer='L4'")
    assert writers and all(w["lc_state"] != "rejected" for w in writers), writers  # nobody rejected the writer's
    assert after_review == [FACET], f"the rejection of the coder's atom took the writer's facet: {facets}"
    assert after_restated == [FACET], f"said to the writer again, the facet stays out: {facets}"
