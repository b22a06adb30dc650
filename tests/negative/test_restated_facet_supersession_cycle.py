"""A statement said again after its correction, with the older saying delivered last, leaves two persona facets
superseding each other: no version of the preference is current and recall answers the persona with nothing.

Finding: a facet version's id is its statement's (``facet_version``, altm/pipeline/processors/facets.py:24-33:
``id_parts=[home, "L4", facet_key, norm(content)]``), so "I prefer tea in the morning now, actually." said on day 1
and again on day 3 is one facet, placed in time by the earliest of its atoms *stored so far*
(``first``, altm/pipeline/processors/govern.py:188-191). Today's forward step (govern.py:206-217, commits d481357
and 82ffb0f) supersedes a facet by the facet of a *later* statement. With the turns delivered as coffee (day 2),
tea (day 3), tea (day 1) — a backfill of an older session, an import of history after live traffic:

1. the day-3 tea is governed while its only atom is the day-3 one: ``earlier`` = [coffee], so coffee's facet is
   superseded by tea's (the tea sentence carries a correction cue);
2. the day-1 tea is governed: ``first`` moves to the day-1 atom, ``earlier`` is empty, ``later`` = [coffee], and
   the forward step proposes "tea superseded by coffee".

The writer's ``supersede`` (altm/pipeline/writer/ops/governance.py:50-58) only refuses when the *old* row is already
superseded by another; it never checks that the *new* row is itself superseded by the old one, so it applies the
second supersession too: tea.superseded_by = coffee and coffee.superseded_by = tea, a cycle. Both facets leave
recall (it admits only rows with no ``superseded_by``), and the user's preference is gone from the persona
although the user stated it three times. The same turns in time order leave one current facet. The order of
delivery alone decides whether the persona keeps the preference (README: "the final state does not depend on
arrival order").

Reproduction: embedded runtime, no embedder. Three turns of one user in three sessions: day 1 "I prefer tea in
the morning now, actually.", day 2 "I prefer coffee in the morning now, actually.", day 3 the day-1 sentence
again. One data dir takes them in time order, another as day 2, day 3, day 1 (each derived before the next).
Read the L4 facets.

Expected: in both arrival orders exactly one facet version of the preference is current (no two facets supersede
each other), both orders agree on which statement is current, and a lexical recall returns that facet.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0

TEA = "I prefer tea in the morning now, actually."
COFFEE = "I prefer coffee in the morning now, actually."


def _turn(day: int, content: str, session: str) -> TurnEvent:
    return TurnEvent(scope=SCOPE, session_id=session, turn_id=f"{session}-t1", role=Role.USER, content=content,
                     timestamp=T0 + timedelta(days=day))


DAY1, DAY2, DAY3 = _turn(1, TEA, "a"), _turn(2, COFFEE, "b"), _turn(3, TEA, "c")


def _facets(data_dir: Path) -> dict[str, dict[str, Any]]:
    found = rows(data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")
    return {("tea" if "tea" in str(r["content"]) else "coffee"): r for r in found}


def _current(facets: dict[str, dict[str, Any]]) -> set[str]:
    return {name for name, row in facets.items() if row["superseded_by"] is None}


async def test_a_restated_preference_never_leaves_its_facets_superseding_each_other(settings: Settings,
                                                                                    tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    in_time, late = await in_each_order(s, tmp_path / "orders", [], [("in-time", [DAY1, DAY2, DAY3]),
                                                                     ("older-last", [DAY2, DAY3, DAY1])])
    in_time_facets, late_facets = _facets(in_time), _facets(late)
    assert set(in_time_facets) == set(late_facets) == {"tea", "coffee"}, (in_time_facets, late_facets)
    assert len(_current(in_time_facets)) == 1, in_time_facets
    # actual: tea superseded by coffee and coffee superseded by tea — no current version at all
    assert len(_current(late_facets)) == 1, ("the two facets supersede each other", late_facets)
    assert _current(late_facets) == _current(in_time_facets)


async def test_recall_keeps_the_persona_preference_whatever_the_arrival_order(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (rt, app):
        for turn in (DAY2, DAY3, DAY1):
            await rt.publish([turn])
            await rt.run_until_idle()
        hits = [h.content for h in app.search(SCOPE, "c", "prefer tea coffee morning", preset_name="lexical",
                                              top_k=20).hits if h.layer == "L4"]
    # actual: [] — both facet versions are superseded (by each other), so the persona answers nothing
    assert len(hits) == 1, hits
