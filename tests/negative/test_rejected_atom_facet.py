"""A preference a reviewer rejected stays the user's current persona facet (L4), recalled as before.

"I prefer tabs over spaces in Python." is extracted as a preference atom, and govern derives an L4 facet from
it ("Preference ...: I prefer tabs ..."), citing the atom. A reviewer rejects the atom (it was mis-heard, or
said about someone else): the atom is ``contradicted``/``rejected`` and out of recall, and since 5d24fb6 it no
longer supports or contradicts any other atom. But its facet is untouched: still current, ``lc_state`` active,
its trust not weighed down, and recalled as the user's profile. The reviewer's decision is undone one layer up:
the agent keeps acting on the rejected preference. (The same holds for a scene's line quoting it.)
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "I prefer tabs over spaces in Python."


async def test_a_rejected_atoms_facet_leaves_recall(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        (atom,) = rows(s.data_dir, "SELECT memory_id, kind FROM memories WHERE layer='L2' AND content=?", (SAID,))
        facets = rows(s.data_dir, "SELECT memory_id, content, evidence FROM memories WHERE layer='L4'")
        assert facets and atom["memory_id"] in facets[0]["evidence"], (atom, facets)
        await app.review_decide(SCOPE, atom["memory_id"], "reject", note="not the user's preference")
        await rt.run_until_idle()
        (rejected,) = rows(s.data_dir, "SELECT lc_state FROM memories WHERE memory_id=?", (atom["memory_id"],))
        assert rejected["lc_state"] == "rejected"
        visible = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}
        after = rows(s.data_dir, "SELECT memory_id, trust_status, lc_state FROM memories WHERE layer='L4'")
        hits = [(h.memory_id, h.layer, h.content)
                for h in app.search(SCOPE, None, "tabs or spaces in Python").hits]
    # what stands only on a rejected atom is out of recall (or at least held for review) with it
    # the raw message (L0) is what was said; a derived memory stating it as the user's preference must not come back
    assert not [h for h in hits if "tabs" in h[2] and h[1] != "L0"], hits
    assert not visible & {f["memory_id"] for f in facets}, after


async def test_a_facet_comes_back_when_its_atom_is_approved_after_its_rejection(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (SAID,))
        facets = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}
        for decision in ("reject", "approve"):
            await app.review_decide(SCOPE, atom["memory_id"], decision)
            await rt.run_until_idle()
        visible = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}
        (facet,) = rows(s.data_dir, "SELECT trust_status, lc_state FROM memories WHERE layer='L4'")
    assert facets and visible == facets, (facets, visible)
    assert (facet["trust_status"], facet["lc_state"]) == ("unverified", "active"), dict(facet)
