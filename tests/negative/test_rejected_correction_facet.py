"""A correction a reviewer rejected keeps the facet version it replaced superseded: the user is left with no
current persona facet for the topic.

"I prefer dark mode in every editor." (session a) gives the facet "Preference (mode editor): I prefer dark mode
…". "I prefer light mode in the editor now, actually." (session b) is a stated correction, so govern supersedes
the dark facet with a light one (``superseded_by`` names it). A reviewer then rejects the light atom (the
correction was mis-heard, or said about someone else): the light facet follows its atom out of recall
(``test_rejected_atom_facet.py``), but the dark facet stays superseded by the rejected one, out of recall too.
The user's profile now holds no editor-mode preference at all, and ``prepare_turn`` serves no L4 facet for it;
the reviewer's "this correction is wrong" erased the value it was wrong about.

Expected: the version the rejected correction superseded is current again, as it is when that correction is
erased or forgotten (README, "A memory an erased one had superseded … is as it was before";
``test_erasure_supersession.py``), and is superseded again if the correction is approved after all.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."


async def test_rejecting_a_correction_brings_back_the_facet_it_superseded(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        await say(rt, 3, LIGHT, "b")
        before = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        assert before == [f"Preference (mode editor): {LIGHT}"], before  # the correction superseded dark mode
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (LIGHT,))
        await app.review_decide(SCOPE, atom["memory_id"], "reject", note="mis-heard: the user still means dark")
        await rt.run_until_idle()
        current = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        facets = rows(s.data_dir, "SELECT content, lc_state, superseded_by FROM memories WHERE layer='L4'")
        bundle = await app.prepare_turn(SCOPE, "c", "c-t1", "Which editor mode do I prefer, dark or light?", 2000)
        served = [i.text for i in bundle.bundle.items if i.layer == "L4"]
    assert current == [f"Preference (mode editor): {DARK}"], facets
    assert any("dark mode" in t for t in served), (served, facets)
