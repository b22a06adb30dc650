"""Rolling back a forget brings the memories back, but not their lines in the scene and capsule.

Since 353c0db a forget names the anchors of the scenes its atoms were in (govern computes them again without the
forgotten lines) and a message of each session it took a message from (fold folds the capsule again). Those
recomputations are proposals of their own, not part of the forget's audit, so ``governance.rollback`` of the
forget reinserts the message and the atom (and their MENTIONS edges and evidence) but leaves the scene and the
capsule as they were recomputed *without* them: the rollback's change names no anchor (``Applied.mentioned``
empty) and is no op fold or govern accept for a session or a scene. Before 353c0db the forget left the scene
and capsule text alone, so its rollback gave the user back exactly the state before it.

What a user expects (README, Lifecycle: "a rollback restores the prior rows from the audit log, except what
changed since the decision"): after the operator rolls back a retention pass by mistake, the restored atom is
a member of its anchor's scene again ("Marco — 3 memories across sessions s1, s2, s3", as before the forget),
and the restored message is in its session's capsule again. "Derived state is recomputed from what is stored":
the same stored atoms and messages make the same scene and capsule as a store that never forgot them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

FORGOTTEN = "I decided to call Marco every Sunday evening."
SAID = [("s1", FORGOTTEN, 0),
        ("s2", "I decided to go hiking with Marco near the lake.", 50),
        ("s3", "My friend Marco is allergic to peanuts.", 51)]
SESSION = [("s1", FORGOTTEN, 0), ("s1", "We decided to deploy the billing service on Fridays.", 40)]
LATER = T0 + timedelta(days=60)


def _turns(said: list[tuple[str, str, int]]) -> list[TurnEvent]:
    return [make_turn(i, text, session=session).model_copy(update={"timestamp": T0 + timedelta(days=day)})
            for i, (session, text, day) in enumerate(said, 1)]


def _retention(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                       "data_dir": settings.data_dir.parent / name})


def _layer(data_dir: Path, layer: str) -> list[str]:
    return [str(r["content"]) for r in rows(data_dir, "SELECT content FROM memories WHERE layer=?", (layer,))]


def _forget(app: object) -> str:
    (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE)  # type: ignore[attr-defined]
                   if e["decision"] == "forget"}
    return str(decision)


async def test_a_rolled_back_forget_puts_the_atom_back_in_its_scene(settings: Settings) -> None:
    s = _retention(settings, "scene")
    async with store_with(s, _turns(SAID)) as (rt, app):
        (before,) = _layer(s.data_dir, "L3")
        assert "3 memories across sessions s1, s2, s3" in before
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        assert FORGOTTEN not in _layer(s.data_dir, "L3")[0]
        await app.rollback(SCOPE, _forget(app))
        await rt.run_until_idle()
        atoms = _layer(s.data_dir, "L2")
        after = _layer(s.data_dir, "L3")
    assert FORGOTTEN in atoms, atoms  # the atom is back
    assert after == [before], ("the restored atom is not in its anchor's scene", after)


async def test_a_rolled_back_forget_puts_the_message_back_in_its_capsule(settings: Settings) -> None:
    s = _retention(settings, "capsule")
    async with store_with(s, _turns(SESSION)) as (rt, app):
        (before,) = _layer(s.data_dir, "L1")
        assert "Marco" in before
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        assert "Marco" not in _layer(s.data_dir, "L1")[0]
        await app.rollback(SCOPE, _forget(app))
        await rt.run_until_idle()
        messages = _layer(s.data_dir, "L0")
        after = _layer(s.data_dir, "L1")
    assert FORGOTTEN in messages, messages  # the message is back
    assert after == [before], ("the restored message is not in its session's capsule", after)
