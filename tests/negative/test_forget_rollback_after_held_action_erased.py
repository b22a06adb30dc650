"""A retention pass that voided a held action can no longer be rolled back once the other memory that action
named is erased: the forgotten memories stay gone, and a replay of the same log restores them.

Finding: since commit d7ace11 a forget makes the user's pending held actions that name a forgotten memory
``void``, audited under the forget's decision (``_void_held_actions``, altm/pipeline/writer/ops/lifecycle.py:
148-159, called at line 125). A held supersede names two facets: the older one (forgotten here) and the newer
one. When the user later erases the session of the newer statement, the erasure drops every held action naming
an erased memory and redacts *all* of that action's audit rows (``_drop_held_actions_naming``,
altm/store/_tx/_erasure.py:245-252: ``redact_audit("held_actions", [action_id])``), among them the forget's own
row that set it ``void``. ``rollback`` then refuses the whole forget because one of its audit rows is redacted
(altm/pipeline/writer/ops/governance.py:328-330: "touched erased content; erasure cannot be undone") and files a
rejection in the review queue. Nothing the forget removed was erased: the forgotten preference (its atom and
facet) could be restored, and before today's change it was (the forget did not touch held actions). A replay
of the same log never meets the erased statement, so its forget voids nothing and the rollback applies: the
replayed store holds the restored memories, the source does not (README: a replay rebuilds the same state).

Reproduction: "I prefer dark mode in every editor." at T0 (session a) and "I prefer light mode in every
editor." at T0 + 20 days (session b; no correction cue: the supersede is held for review), L2 and L4
retention of 30 days; ``admin.retention(T0 + 40 days)`` forgets the dark atom and facet (the held action goes
``void``); erase session b; roll the forget back.

Expected: the rollback applies (an erasure of a memory the forget did not remove does not block it): the dark
atom and facet are back, no held action comes back, no rejection is filed, and a replay of the data dir has the
same state.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in every editor."
KEPT = "SELECT layer, content FROM memories WHERE layer IN ('L2', 'L4') ORDER BY layer"


async def test_a_forget_that_voided_a_held_action_rolls_back_after_an_erasure(settings: Settings,
                                                                              tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    light = make_turn(3, LIGHT, session="b").model_copy(update={"timestamp": T0 + timedelta(days=20)})
    async with store_with(s, [make_turn(1, DARK, session="a"), light]) as (rt, app):
        assert len(app.review_queue(SCOPE)["held_actions"]) == 1  # light after dark, no cue: held for review
        await app.admin.retention(T0 + timedelta(days=40))
        await rt.run_until_idle()
        assert [r["status"] for r in rows(s.data_dir, "SELECT status FROM held_actions")] == ["void"]
        await app.erase(SCOPE, "session", session_id="b")
        await rt.run_until_idle()
        (forget,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        request = await app.admin.rollback(SCOPE, forget, "too eager")
        await rt.run_until_idle()
        outcome = app.admin.outcome(request)
        queue = app.review_queue(SCOPE)
        kept = [(r["layer"], r["content"]) for r in rows(s.data_dir, KEPT)]
    # actual: rejected, "decision ... touched erased content; erasure cannot be undone" (the forget's row that
    # voided the held action was redacted with the erased action)
    assert outcome.status == "applied", outcome
    assert queue["rejections"] == [] and queue["held_actions"] == [], queue
    assert kept == [("L2", DARK), ("L4", f"Preference (mode editor): {DARK}")], kept


async def test_the_replay_of_that_log_has_the_same_memories(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    light = make_turn(3, LIGHT, session="b").model_copy(update={"timestamp": T0 + timedelta(days=20)})
    async with store_with(s, [make_turn(1, DARK, session="a"), light]) as (rt, app):
        await app.admin.retention(T0 + timedelta(days=40))
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="b")
        await rt.run_until_idle()
        (forget,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.admin.rollback(SCOPE, forget, "too eager")
        await rt.run_until_idle()
    # actual: the replay (which never held the action) restored the dark atom and facet; the source did not
    await replayed_equal(s, tmp_path / "replayed")
