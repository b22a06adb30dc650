"""After a rejected correction, the next correction leaves two current values of one facet.

bc3da3b: rejecting a correction's atom now releases the facet version it superseded (``_facets_following`` →
``release_superseded``): "a rejected correction no longer hides the value it corrected". But govern chains facet
versions over the *atoms* (``GovernProcessor._facet``: ``previous`` is the latest earlier atom of the facet key
that nothing supersedes, rejected or not), so the user's next correction supersedes the facet of the *rejected*
correction, which is already out of recall, and never the released version that is current again. Before
bc3da3b the old version stayed hidden behind the rejected one, and the next correction was the only current
value.

What a user sees: "I prefer dark mode" (a); "light mode now, actually" (b), which a reviewer rejects: dark is the
profile again, fine. Then the user corrects it for real: "sepia mode in the editor now, actually" (c). The profile
(list_memories L4, and recall) now says both "dark mode" and "sepia mode" for the same facet key, for
good: nothing supersedes the dark version again.

Expected: one current version per facet key, the latest correction: the same profile as a user who said (a)
then (c) (the control below).
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."
CONTRAST = "I prefer sepia mode in the editor now, actually."


def _atom(settings: Settings, content: str) -> str:
    (found,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (content,))
    return str(found["memory_id"])


async def test_the_next_correction_after_a_rejected_one_is_the_only_current_value(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        await say(rt, 3, LIGHT, "b")
        await app.review_decide(SCOPE, _atom(s, LIGHT), "reject")
        await rt.run_until_idle()
        assert [r["content"] for r in app.list_memories(SCOPE, layer="L4")] == [f"Preference (mode editor): {DARK}"]
        await say(rt, 5, CONTRAST, "c")
        current = sorted(str(r["content"]) for r in app.list_memories(SCOPE, layer="L4"))
        facets = rows(s.data_dir, "SELECT content, superseded_by, lc_state FROM memories WHERE layer='L4'")
    control = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir.parent / "control"})
    async with embedded(control) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        await say(rt, 5, CONTRAST, "c")
        expected = sorted(str(r["content"]) for r in app.list_memories(SCOPE, layer="L4"))
    assert len(expected) == 1 and CONTRAST in expected[0], expected
    assert current == expected, ("two current versions of one facet", current, facets)
