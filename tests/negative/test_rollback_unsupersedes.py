"""Rolling back a demotion must not undo a supersession that came after it.

The user says "I prefer dark mode in every editor." (persona facet F1). An agent marks F1 harmful: demoted.
Later the user corrects it: "I prefer light mode in the editor now, actually." — F2 supersedes F1 (``superseded_by``
set, validity closed; README: superseded versions stay out of default recall). Then an operator rolls back the
*demotion* (the harm mark was a mistake). The rollback writes F1's whole pre-demotion row back from the audit log,
``superseded_by = NULL`` and ``valid_to = NULL`` included: F1 is current again, both preferences are listed and
recalled as the user's present profile, while the supersede decision is still recorded as applied (and was never
rolled back) and its SUPERSEDES edge stays.

Expected: a rollback undoes what its own decision changed (here the lifecycle weight and state); the supersession
that a later, independent decision made stands, so only the light-mode facet is current.
"""

from __future__ import annotations

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."


async def test_a_demotion_rolled_back_leaves_the_later_supersession(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, DARK, session="a")]) as (rt, app):
        (dark,) = app.list_memories(SCOPE, layer="L4")
        await app.feedback(SCOPE, [dark["memory_id"]], "harmful")
        await rt.run_until_idle()
        (demotion,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "demote"}
        await rt.publish([make_turn(3, LIGHT, session="b")])
        await rt.run_until_idle()
        (before,) = rows(s.data_dir, "SELECT superseded_by FROM memories WHERE memory_id=?", (dark["memory_id"],))
        assert before["superseded_by"] is not None  # the correction superseded the dark-mode facet
        assert [r["content"] for r in app.list_memories(SCOPE, layer="L4")] == [
            f"Preference (mode editor): {LIGHT}"]
        await app.rollback(SCOPE, str(demotion))
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, "SELECT superseded_by, valid_to, lc_state FROM memories WHERE memory_id=?",
                        (dark["memory_id"],))
        listed = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        supersede_steps = {e["step"] for e in app.governance_events(SCOPE) if e["decision"] == "supersede"}
    assert "rolled_back" not in supersede_steps  # nobody undid the supersession
    assert after["superseded_by"] == before["superseded_by"], (
        "rolling back the demotion brought the superseded facet back as current", dict(after), listed)
    assert listed == [f"Preference (mode editor): {LIGHT}"], listed
