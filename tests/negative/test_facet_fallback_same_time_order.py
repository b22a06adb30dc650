"""Statements dated at one time and ordered by their turn ids: delivered in reverse, the facet fallback takes a *later*
statement's stored facet for the version before, so a correction supersedes what was said after it (two
statements), or three corrections supersede each other in a ring and no version of the preference is current.

Finding: when no atom of the topic was said before the governed statement, ``GovernProcessor._facet`` falls back to
the stored facets ("retention may have forgotten the atoms of the version before",
altm/pipeline/processors/govern.py:208-211) and takes the latest facet with ``order(f) < order(facet)``. But
``order`` (altm/pipeline/processors/facets.py:35-44) reads the turn id from ``attributes["turn_id"]`` or
``source_id``, and a facet has neither (``facet_version``, facets.py:24-33, copies no turn id; a derived memory's
``source_id`` is None): two facets of one valid time compare by memory id, a hash. The fallback also runs
whenever ``earlier`` is empty, even though the atoms of the stored facet are all there and said *after* this one.
So with "I prefer coffee in the morning now, actually." (turn s-t1) and "I prefer water in the morning." (turn
s-t2) at one time, water delivered first: governing coffee finds no earlier atom, the fallback picks the water
facet (its id hashes lower), and the correction cue supersedes water by coffee — although water was said after
it, without a cue (time order holds that supersede for review and keeps both). With three corrections tea (t1),
coffee (t2), water (t3) delivered water, coffee, tea: coffee is superseded by water (forward step), then tea's
fallback takes the water facet as its predecessor (water superseded by tea) and the forward step supersedes tea
by coffee: a ring of three (the writer's release of a reversed supersession, altm/pipeline/writer/ops/
governance.py:59-61, only sees a ring of two), and recall answers the persona with nothing.

Reproduction: embedded runtime, no embedder, one session "s", every turn at T0, turn ids s-t1, s-t2, s-t3. Deliver
the turns one at a time (each derived before the next) in time order into one data dir, in reverse into another;
read the current L4 facets (``superseded_by`` NULL, not rejected).

Expected: both data dirs hold the same current facets (coffee and water; in the three-statement case, water
alone), no two facets supersede each other, no rejection is filed, and a lexical recall returns the current facet.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Role, Settings, TurnEvent
from tests.support.facets import current_statements, rejection_reasons
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.turns import SCOPE, T0

TEA = "I prefer tea in the morning now, actually."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning."
WATER_INSTEAD = "I prefer water in the morning instead, actually."


def _turn(n: int, content: str) -> TurnEvent:
    return TurnEvent(scope=SCOPE, session_id="s", turn_id=f"s-t{n}", role=Role.USER, content=content, timestamp=T0)


async def test_a_correction_does_not_supersede_what_was_said_after_it(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    coffee, water = _turn(1, COFFEE), _turn(2, WATER)
    in_time, reversed_ = await in_each_order(s, tmp_path / "orders", [], [("in-time", [coffee, water]),
                                                                          ("reversed", [water, coffee])])
    assert current_statements(in_time) == sorted([COFFEE, WATER])
    # actual: [COFFEE] — the water facet (said after the correction) is superseded by coffee
    assert current_statements(reversed_) == current_statements(in_time), (current_statements(reversed_),
                                                                       current_statements(in_time))
    assert rejection_reasons(reversed_) == []


async def test_three_corrections_at_one_time_never_supersede_each_other_in_a_ring(settings: Settings,
                                                                                  tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    tea, coffee, water = _turn(1, TEA), _turn(2, COFFEE), _turn(3, WATER_INSTEAD)
    in_time, reversed_ = await in_each_order(s, tmp_path / "orders", [], [("in-time", [tea, coffee, water]),
                                                                          ("reversed", [water, coffee, tea])])
    assert current_statements(in_time) == [WATER_INSTEAD]
    # actual: [] — water by tea, tea by coffee, coffee by water
    assert current_statements(reversed_) == [WATER_INSTEAD], current_statements(reversed_)
    async with store_with(s.model_copy(update={"data_dir": tmp_path / "recall"}), []) as (rt, app):
        for turn in (water, coffee, tea):
            await rt.publish([turn])
            await rt.run_until_idle()
        hits = [h.content for h in app.search(SCOPE, "s", "prefer tea coffee water morning", preset_name="lexical",
                                              top_k=20).hits if h.layer == "L4"]
    assert len(hits) == 1 and WATER_INSTEAD in hits[0], hits
