"""Retention reaches the versions a newer one superseded.

Retention named only memories that nothing superseded, so a superseded version was never past retention:
when its successor was forgotten, the old version stayed for good, out of recall (``superseded_by`` named a
memory no longer there) yet kept past retention — what the user said a year ago outlived what replaced it."""

from __future__ import annotations

from datetime import timedelta

from altm.app import MemoryApp
from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
from tests.support.rows import dangling, rows
from tests.support.turns import SCOPE, T0, make_turn

LATER = T0 + timedelta(days=90)
DARK = "Preference (mode editor): I prefer dark mode in every editor."
LIGHT = "Preference (mode editor): I prefer light mode in the editor now, actually."


def _turns(days_apart: int) -> list[TurnEvent]:
    light = make_turn(3, "I prefer light mode in the editor now, actually.", session="b")
    return [make_turn(1, "I prefer dark mode in every editor.", session="a"),
            light.model_copy(update={"timestamp": T0 + timedelta(days=days_apart)})]


def _retention(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l1": 30.0,
                                       "retention_days_l2": 30.0, "retention_days_l4": 30.0})


def _facets(settings: Settings) -> list[dict[str, object]]:
    return rows(settings.data_dir, "SELECT content, superseded_by FROM memories WHERE layer='L4' ORDER BY content")


def _l4_hits(app: MemoryApp) -> list[str]:
    return [h.content for h in app.search(SCOPE, "c", "editor mode dark light", preset_name="lexical",
                                          top_k=20).hits if h.layer == "L4"]


async def test_a_version_past_retention_goes_with_its_successor(settings: Settings) -> None:
    s = _retention(settings)
    async with store_with(s, _turns(days_apart=10)) as (rt, app):
        before = _facets(s)
        assert [f["superseded_by"] is not None for f in before] == [True, False], before  # dark, then light
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        after = _facets(s)
    assert after == [] and dangling(s.data_dir) == []
    fresh = s.data_dir.parent / "fresh-superseded"
    await replay_into(s.data_dir, fresh, settings=s)
    assert state_hash(fresh) == state_hash(s.data_dir)


async def test_a_version_past_retention_goes_while_its_recent_successor_stays(settings: Settings) -> None:
    s = _retention(settings)
    async with store_with(s, _turns(days_apart=70)) as (rt, app):
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        after = _facets(s)
        hits = _l4_hits(app)
    assert after == [{"content": LIGHT, "superseded_by": None}]
    assert dangling(s.data_dir) == [] and hits == [LIGHT]


async def test_a_pinned_version_is_current_again_when_its_successor_is_forgotten(settings: Settings) -> None:
    """Kept while what replaced it goes: nothing newer is left, so it no longer points at a memory that is gone."""
    s = _retention(settings)
    first, second = _turns(days_apart=10)
    async with store_with(s, [first]) as (rt, app):
        (dark,) = app.list_memories(SCOPE, layer="L4")
        await app.feedback(SCOPE, [str(dark["memory_id"])], "pin")
        await rt.run_until_idle()
        await rt.publish([second])
        await rt.run_until_idle()
        assert [f["superseded_by"] is not None for f in _facets(s)] == [True, False]  # dark, then light
        await app.admin.retention(LATER)
        await rt.run_until_idle()
        after = _facets(s)
        hits = _l4_hits(app)
    assert after == [{"content": DARK, "superseded_by": None}]
    assert dangling(s.data_dir) == [] and hits == [DARK]
