"""Erasing one session of a scene takes the whole scene out until the anchor happens to be mentioned again.

Marco is named in s1, s2 and s3: one scene of Marco across s1-s3. The user erases session s3. The erasure
takes the scene with it (it cites the s3 atom: ``_with_derivatives``), which is right, but nothing computes it
again from what is left: govern computes a scene only on a committed link or MENTIONS edge, and the erasure's
change names no atom that mentions Marco. So the s1 and s2 atoms, both about Marco and both kept, have no scene
(README: an L3 scene is "an entity across ≥2 sessions") until the user mentions Marco again, maybe never. For a
session capsule the erasure does the opposite on purpose: it returns a message of each session that keeps
messages so fold "folds it again at once from what is left … (the state must not depend on whether the
session's next message ever comes)" (``erasure._messages_left``).

Expected: right after the erasure, the anchor's scene is computed again from the atoms left: Marco across s1
and s2, without the erased session's line, as a store that only ever heard s1 and s2 has it.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

SAID = [("s1", "I decided to call Marco every Sunday evening."),
        ("s2", "I decided to go hiking with Marco near the lake."),
        ("s3", "My friend Marco is allergic to peanuts.")]


def _scenes(settings: Settings) -> list[str]:
    return [str(r["content"]) for r in rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L3'")]


async def test_a_scene_left_with_two_sessions_is_computed_again_after_an_erasure(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, (session, text) in enumerate(SAID, 1):
            await say(rt, i, text, session)
        assert len(_scenes(s)) == 1 and "s1, s2, s3" in _scenes(s)[0]
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
        after = _scenes(s)
        atoms = rows(s.data_dir, "SELECT session_id, content FROM memories WHERE layer='L2'")
    assert {a["session_id"] for a in atoms} == {"s1", "s2"}  # both Marco atoms kept
    assert len(after) == 1 and after[0].startswith("Scene: Marco — 2 memories across sessions s1, s2"), after


async def test_the_same_atoms_without_the_erased_session_have_a_scene(settings: Settings) -> None:
    """The control: a store that heard s1 and s2 only has the scene the erasure above left out."""
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        for i, (session, text) in enumerate(SAID[:2], 1):
            await say(rt, i, text, session)
        found = _scenes(s)
    assert len(found) == 1 and found[0].startswith("Scene: Marco — 2 memories across sessions s1, s2"), found
