"""Persona facet scenarios: statements said on days of their own, and what the facets end as."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from altm.core import Role, Scope, TurnEvent
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn


def said_on(day: int, content: str, scope: Scope = SCOPE) -> TurnEvent:
    """The user's statement on ``day`` after ``T0``, alone in session ``s<day>``."""
    return TurnEvent(scope=scope, session_id=f"s{day}", turn_id=f"s{day}-t1", role=Role.USER, content=content,
                     timestamp=T0 + timedelta(days=day))


def current_statements(data_dir: Path) -> list[str]:
    """The statements of the facets that are current (superseded by none, not rejected), sorted."""
    return sorted(str(r["content"]).split(": ", 1)[1] for r in rows(
        data_dir, "SELECT content, superseded_by, lc_state FROM memories WHERE layer = 'L4'")
        if r["superseded_by"] is None and r["lc_state"] != "rejected")


def memory_id_of(data_dir: Path, layer: str, statement: str) -> str:
    """The id of the one memory of ``layer`` whose content ends with ``statement`` (a facet's is its label, then it)."""
    found = [str(r["memory_id"]) for r in rows(data_dir, "SELECT memory_id, content FROM memories WHERE layer = ?",
                                               (layer,)) if str(r["content"]).endswith(statement)]
    assert len(found) == 1, (layer, statement, found)
    return found[0]


def pending_holds(data_dir: Path) -> int:
    """How many held actions wait for review."""
    return len(rows(data_dir, "SELECT action_id FROM held_actions WHERE status = 'pending'"))


def inverted_facets(data_dir: Path) -> list[dict[str, object]]:
    """Facets valid until before they are valid from."""
    return [r for r in rows(data_dir, "SELECT content, valid_from, valid_to FROM memories WHERE layer = 'L4'")
            if r["valid_to"] is not None and str(r["valid_to"]) < str(r["valid_from"])]


def rejection_reasons(data_dir: Path) -> list[str]:
    """Why the writer refused what it refused (the review queue's rejections)."""
    return [str(r["reason"]) for r in rows(data_dir, "SELECT reason FROM rejections")]


DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."


def dark_then_light() -> tuple[TurnEvent, TurnEvent]:
    """A preference (turn 1, session a, at ``T0``) and its correction ten days later (turn 3, session b)."""
    dark = make_turn(1, DARK, session="a")
    light = make_turn(3, LIGHT, session="b").model_copy(update={"timestamp": T0 + timedelta(days=10)})
    return dark, light


def dark_and_light_facets(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The two facets of :func:`dark_then_light`, by name ("dark", "light"): id, content, superseded_by, valid_to."""
    return {("light" if "light" in str(r["content"]) else "dark"): r for r in rows(
        data_dir, "SELECT memory_id, content, superseded_by, valid_to FROM memories WHERE layer = 'L4'")}
