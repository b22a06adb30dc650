"""A persona facet taken out with its rejected atom comes back when the user states the preference again.

A reviewer rejects "I prefer tabs over spaces in Python." (mis-heard): its facet leaves recall with it. Later the
user really says it, in another session. A first version of the fix kept the facet out for good: the re-statement
was merged into the earliest, rejected atom (out of recall with it), and govern cited that atom. Now no duplicate
folds into a rejected atom and govern cites the earliest atom nobody rejected, which brings the facet back.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SAID = "I prefer tabs over spaces in Python."


async def test_a_facet_comes_back_when_its_preference_is_said_again(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="s1")])
        await rt.run_until_idle()
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (SAID,))
        facets = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}
        assert facets
        await app.review_decide(SCOPE, atom["memory_id"], "reject", note="mis-heard")
        await rt.run_until_idle()
        assert not {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}  # out with its atom
        await rt.publish([make_turn(2, SAID, session="s2")])
        await rt.run_until_idle()
        atoms = rows(s.data_dir, "SELECT memory_id, lc_state FROM memories WHERE layer='L2' AND content=?", (SAID,))
        visible = {r["memory_id"] for r in app.list_memories(SCOPE, layer="L4")}
        after = rows(s.data_dir, "SELECT memory_id, evidence, trust_status, trust_reason, lc_state FROM memories "
                                 "WHERE layer='L4'")
    assert any(a["lc_state"] != "rejected" for a in atoms), [dict(a) for a in atoms]  # said again, not rejected
    assert visible == facets, [dict(f) for f in after]
