"""A reviewer's rejection sent under another agent of the user leaves the atom's scene quoting it.

Reviews are the user's (a reviewer sees "only their user's" items: ``_payload_in_home``; a review of a memory
checks the user, not the agent), so an operator may reject agent ``coder``'s atom from the ``reviewer`` agent's
scope (the CLI's ``--scope T/W/U/A`` names any agent of the user). bc3da3b makes a review of an atom name its
graph nodes (``Applied.mentioned``) so govern computes their scenes again without it. But govern computes the
scene of ``event.scope`` — the *review's* scope, agent ``reviewer`` (``GovernProcessor._scene`` →
``reader.scene_members(event.scope, …)``, per agent) — where the atom's scenes are the ``coder`` agent's. The
coder's scene is never recomputed: it keeps the rejected atom's line and recall serves it, until Marco is
mentioned again in the coder's sessions. The same rejection sent under the ``coder`` scope drops the line at
once (``test_review_follows_up.py``), so what a user sees depends on which of their agents the reviewer used.

Expected: a rejection takes the atom's line out of the scenes it is in (those of the atom's own agent), whatever
agent of the user the review was sent from.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

PEANUTS = "My friend Marco is allergic to peanuts."
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})


async def test_a_rejection_from_a_sibling_agent_scope_drops_the_line_from_the_atoms_scene(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, "I decided to call Marco every Sunday evening.", "s1")
        await say(rt, 2, "I decided to go hiking with Marco near the lake.", "s2")
        await say(rt, 3, PEANUTS, "s3")
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (PEANUTS,))
        (before,) = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L3'")
        assert "peanuts" in str(before["content"])
        await app.review_decide(REVIEWER, str(atom["memory_id"]), "reject")
        await rt.run_until_idle()
        (state,) = rows(s.data_dir, "SELECT lc_state FROM memories WHERE memory_id=?", (atom["memory_id"],))
        scenes = rows(s.data_dir, "SELECT agent_id, content, lc_state FROM memories WHERE layer='L3'")
    assert state["lc_state"] == "rejected"  # the review applied
    assert [r for r in scenes if "peanuts" in str(r["content"]) and r["lc_state"] != "rejected"] == [], (
        "the coder's scene still quotes the atom a reviewer rejected", scenes)
