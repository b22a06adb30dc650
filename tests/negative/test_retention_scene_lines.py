"""A scene keeps quoting an atom retention forgot, until the anchor happens to be mentioned again.

Marco is named in s1 (day 0), s2 (day 50) and s3 (day 51): one scene "Marco — 3 memories across sessions s1,
s2, s3" quoting the three atoms. ``ALTM_RETENTION_DAYS_L0/L2=30``; a retention pass at day 60 forgets the s1
message and its atom. The forget "repairs the evidence of what was derived from it" (README, Lifecycle): the
scene's evidence no longer names the s1 atom, but its text is left as it was — the forgotten atom's line
"- [s1] decision: I decided to call Marco every Sunday evening." and the header "3 memories across sessions s1,
s2, s3" — and ``search`` serves it. Nothing computes the scene again: the forget's change names no anchor
(``Applied.mentioned`` is empty), while an erasure (a9bfadf) and a reviewer's rejection (bc3da3b) both name
the anchor so govern computes the scene again from the atoms left. The scene changes only when Marco is
mentioned again, maybe never.

What a user expects: content retention forgot is not served back through a summary that quoted it, and the
README's "Derived state is recomputed from what is stored, so the final state does not depend on arrival
order" (Memory formation): the same stored atoms (s2, s3) make the same scene whether the forget came before
or after them. With one session left, the atoms make no scene: the scene is kept as it was, its evidence
repaired (a summary outlives what it summarised until its own layer's retention), until they make one again.
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
LATER = T0 + timedelta(days=60)  # s1 is past a 30-day retention, s2 and s3 are not


def _turns(said: list[tuple[str, str, int]]) -> list[TurnEvent]:
    return [make_turn(i, text, session=session).model_copy(update={"timestamp": T0 + timedelta(days=day)})
            for i, (session, text, day) in enumerate(said, 1)]


def _retention(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                       "data_dir": settings.data_dir.parent / name})


def _scenes(data_dir: Path) -> list[str]:
    return [str(r["content"]) for r in rows(data_dir, "SELECT content FROM memories WHERE layer='L3'")]


async def test_a_forgotten_atom_leaves_the_scene_that_quoted_it(settings: Settings) -> None:
    s = _retention(settings, "forgot")
    async with store_with(s, _turns(SAID)) as (rt, app):
        (before,) = _scenes(s.data_dir)
        assert FORGOTTEN in before and "3 memories across sessions s1, s2, s3" in before
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE content = ? AND layer IN ('L0', 'L2')",
                    (FORGOTTEN,)) == []  # the message and its atom are gone
        after = _scenes(s.data_dir)
        served = [h.content for h in app.search(SCOPE, "s9", "Marco Sunday evening", preset_name="lexical").hits]
    control = _retention(settings, "never-said")  # a store that only heard s2 and s3
    async with store_with(control, _turns(SAID[1:])):
        expected = _scenes(control.data_dir)
    assert expected and expected[0].startswith("Scene: Marco — 2 memories across sessions s2, s3")
    assert not [c for c in served if FORGOTTEN in c], f"search serves the forgotten atom's line: {served}"
    assert after == expected, f"the scene after the forget: {after}"


async def test_a_scene_left_with_one_session_is_kept_until_the_atoms_make_one_again(settings: Settings) -> None:
    """s1 (forgotten) and s2 only: what is left is one session, which makes no scene. The scene stays as it was,
    its evidence repaired (README: a memory retention took evidence from keeps the rest; a summary outlives
    what it summarised until its own layer's retention); once the anchor is in two sessions again, it is
    computed from the atoms left, without the forgotten line."""
    s = _retention(settings, "one-left")
    async with store_with(s, _turns(SAID[:2])) as (rt, app):
        (before,) = _scenes(s.data_dir)
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        kept = _scenes(s.data_dir)
        evidence = rows(s.data_dir, "SELECT evidence FROM memories WHERE layer='L3'")
        await rt.publish(_turns([SAID[2]]))
        await rt.run_until_idle()
        again = _scenes(s.data_dir)
    assert kept == [before] and len(evidence) == 1 and evidence[0]["evidence"].count("mem_") == 1, evidence
    assert len(again) == 1 and "across sessions s2, s3" in again[0] and FORGOTTEN not in again[0], again
