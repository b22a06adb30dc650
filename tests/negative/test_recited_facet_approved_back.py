"""A persona facet re-cited to a sibling agent's atom does not come back when the first agent's atom is approved
again (red-team review of facets across agents).

What a user expects (README: a facet none of whose atoms is left unrejected leaves recall, "unless another
atom of the user states it"; "Approved again: a facet it took out comes back"): the user said "I prefer tabs
over spaces in Python." to two agents (coder, then writer). A reviewer rejects coder's atom: the facet
re-cites writer's atom (holds). A reviewer rejects writer's atom too: the facet leaves recall (holds). The
reviewer then approves coder's atom again: an unrejected atom of the user states the facet, so it is back in
recall, citing coder's atom, as in a store where only writer's atom was ever rejected. Actually the facet stays
``rejected`` (out of recall) for good: the approval follows only the facets that cite the approved atom
(``tx.dependants([atom_id])``), and the re-cite replaced coder's atom in the facet's evidence with writer's.
Suspected cause: altm/pipeline/writer/ops/governance.py ``_facets_following`` (approve branch: dependants of the
approved atom only) with ``facet_recited`` (altm/pipeline/writer/ops/memory.py) dropping the atom it stood on
from the evidence; an approval should also bring back (re-cite) the user's facets of that statement whose every
atom is rejected (``stands_on`` over ``atoms_of_facet``). The same three decisions with the two rejections in
the other order (writer's first) leave the facet back in recall, citing coder's atom: the state depends on the
order of reviews.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
SAID = "I prefer tabs over spaces in Python."
FACET = "SELECT agent_id, evidence, lc_state FROM memories WHERE layer='L4'"


async def test_the_facet_comes_back_with_the_approved_atom(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, SAID, session="a1"), make_turn(2, SAID, scope=WRITER, session="b1")):
            await rt.publish([turn])
            await rt.run_until_idle()
        atoms = {r["agent_id"]: r["memory_id"] for r in rows(s.data_dir, "SELECT agent_id, memory_id FROM memories "
                                                                         "WHERE layer='L2'")}
        await app.review_decide(SCOPE, atoms["coder"], "reject")
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, FACET)
        assert (facet["agent_id"], facet["lc_state"]) == ("writer", "active"), facet  # holds: re-cited
        await app.review_decide(WRITER, atoms["writer"], "reject")
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, FACET)
        assert facet["lc_state"] == "rejected", facet  # holds: no unrejected atom states it
        await app.review_decide(SCOPE, atoms["coder"], "approve")
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, FACET)
    assert facet["lc_state"] != "rejected" and atoms["coder"] in facet["evidence"], facet  # actual: rejected, writer's


async def test_the_same_reviews_in_the_other_order_bring_it_back(settings: Settings) -> None:
    """Holds: writer's atom rejected first, then coder's, then coder's approved: the facet is back (the result
    of the same three decisions depends on the order of the two rejections)."""
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, SAID, session="a1"), make_turn(2, SAID, scope=WRITER, session="b1")):
            await rt.publish([turn])
            await rt.run_until_idle()
        atoms = {r["agent_id"]: r["memory_id"] for r in rows(s.data_dir, "SELECT agent_id, memory_id FROM memories "
                                                                         "WHERE layer='L2'")}
        for scope, agent, decision in ((WRITER, "writer", "reject"), (SCOPE, "coder", "reject"),
                                       (SCOPE, "coder", "approve")):
            await app.review_decide(scope, atoms[agent], decision)
            await rt.run_until_idle()
        (facet,) = rows(s.data_dir, FACET)
    assert facet["lc_state"] != "rejected" and atoms["coder"] in facet["evidence"], facet
