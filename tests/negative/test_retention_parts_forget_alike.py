"""A retention pass split in parts (LIFECYCLE_PART) forgets differently than the same pass in one event: a
persona facet whose atom and facet fall in one part and whose restatement falls in the next is re-cited onto the
restatement, then kept flagged when that goes, where one event forgets it."""
from __future__ import annotations

from datetime import timedelta

import pytest

import altm.app._admin as admin
from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

SAID = "I prefer short answers in every reply."  # ids sort facet, first atom, restatement: parts of 2 split them


async def _left(settings: Settings, part: int, monkeypatch: pytest.MonkeyPatch, name: str) -> list[dict[str, object]]:
    monkeypatch.setattr(admin, "LIFECYCLE_PART", part, raising=False)  # main: one event
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir.parent / name,
                                    "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    async with store_with(s, [make_turn(1, SAID, session="a"), make_turn(2, SAID, session="b")]) as (rt, app):
        assert len(app.admin.retention_candidates(T0 + timedelta(days=90))) == 3  # two atoms and the facet
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
    return rows(s.data_dir, "SELECT layer, content, evidence, trust_status, trust_reason FROM memories "
                            "WHERE layer IN ('L2', 'L4') ORDER BY memory_id")


async def test_a_pass_in_parts_forgets_as_one_event(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = await _left(settings, 1_000, monkeypatch, "whole")
    parts = await _left(settings, 2, monkeypatch, "parts")
    assert whole == []
    assert parts == whole, f"split in parts, the pass kept the facet: {parts}"


async def test_a_facet_restated_by_another_agent_past_retention_goes(settings: Settings) -> None:
    """The same across agents (also on main, where a pass was one event per agent): the facet and its first atom
    in one agent's event, the other agent's restatement, past retention too, in its own event."""
    from tests.support.turns import SCOPE

    other = SCOPE.model_copy(update={"agent_id": "reviewer"})
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    async with store_with(s, [make_turn(1, SAID, session="a"), make_turn(2, SAID, session="b", scope=other)]) as (
            rt, app):
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT layer, content FROM memories WHERE layer IN ('L2', 'L4')") == []
