"""A scene (L3) keeps quoting an atom a reviewer rejected, and recall serves it.

"I decided to call Marco every Sunday evening." (s1), "I decided to go hiking with Marco near the lake." (s2)
and "My friend Marco is allergic to peanuts." (s3) form three atoms and a scene of Marco across s1-s3 with a
line for each. A reviewer rejects the peanut atom (mis-heard, or about someone else): the atom is ``rejected``
and out of recall, and its persona facet would follow it (``test_rejected_atom_facet.py``). The scene does not:
the review changes nothing one layer up, so the scene stays active and current, still saying "[s3] fact: My
friend Marco is allergic to peanuts.", and ``search`` and ``prepare_turn`` serve it. Worse, the scene is not
fixed when it is recomputed: a later mention of Marco makes govern compute the scene again from
``MemoryReader.scene_members``, which reads every atom with a MENTIONS edge to the node, a rejected one too, so
the rejected line (and its session) is rendered into every later version.

Expected: what a reviewer rejected leaves recall at every layer that quotes it: a scene drops the rejected
atom's line (recomputed from the atoms nobody rejected), or is at least not served with it.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

REJECTED = "My friend Marco is allergic to peanuts."
SAID = [("s1", "I decided to call Marco every Sunday evening."),
        ("s2", "I decided to go hiking with Marco near the lake."),
        ("s3", REJECTED)]


def _scene(settings: Settings) -> dict[str, object]:
    (found,) = rows(settings.data_dir, "SELECT memory_id, content, evidence, lc_state FROM memories "
                                       "WHERE layer='L3' AND content LIKE 'Scene: Marco %'")
    return found


async def test_a_rejected_atoms_line_leaves_its_scene(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, (session, text) in enumerate(SAID, 1):
            await say(rt, i, text, session)
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (REJECTED,))
        assert "peanuts" in str(_scene(s)["content"])  # the scene quotes it before the review
        await app.review_decide(SCOPE, atom["memory_id"], "reject", note="not about the user's friend")
        await rt.run_until_idle()
        scene = _scene(s)
        hits = [(h.layer, h.content) for h in app.search(SCOPE, None, "Marco allergic peanuts").hits]
        bundle = await app.prepare_turn(SCOPE, "s9", "s9-t1", "What is Marco allergic to?", 2000)
        served = [(i.layer, i.text) for i in bundle.bundle.items]
    derived = [h for h in [*hits, *served] if h[0] != "L0" and "peanuts" in h[1]]
    assert not derived, (scene, derived)


async def test_a_scene_recomputed_after_the_rejection_leaves_the_rejected_atom_out(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, (session, text) in enumerate(SAID, 1):
            await say(rt, i, text, session)
        (atom,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (REJECTED,))
        await app.review_decide(SCOPE, atom["memory_id"], "reject")
        await rt.run_until_idle()
        await say(rt, 4, "I decided to buy Marco a new tent for his birthday.", "s4")  # govern computes it again
        scene = _scene(s)
    assert "new tent" in str(scene["content"])  # recomputed
    assert "peanuts" not in str(scene["content"]) and atom["memory_id"] not in str(scene["evidence"]), scene
