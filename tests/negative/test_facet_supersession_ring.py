"""Four statements on four days, the first saying delivered last: three persona facets supersede each other in a
ring, so no version of the preference is current and recall answers the persona with nothing.

Finding: the writer's ``supersede`` (altm/pipeline/writer/ops/governance.py:50-73) refuses to link a row already
superseded by another and releases a supersession *directly* the other way round (governance.py:59-61: only when
``newer["superseded_by"] == old_id``), but never follows ``newer``'s chain: a supersession that closes a ring of
three or more is applied. Govern proposes one: with tea (day 0, "now, actually"), coffee (day 1, "now, actually"),
water (day 2, "instead, actually") and tea again (day 3) delivered as coffee, water, tea day 3, tea day 0:

1. water supersedes coffee; the day-3 tea's backward step takes water (said last before it) and supersedes water
   by tea (altm/pipeline/processors/govern.py:199-207);
2. the day-0 tea moves the tea facet to day 0 (``first``, govern.py:188-191), nothing releases step 1's
   "water superseded by tea" (see test_restated_earlier_keeps_stale_supersession.py), and the forward step
   (govern.py:216-225) proposes "tea superseded by coffee" (coffee is said next after day 0 and carries a cue);
3. the writer sees tea not yet superseded and coffee superseded by water, not by tea, so it applies it: coffee →
   water → tea → coffee.

In time order water is the one current version. The README promises that the final state does not depend on arrival
order and that no two facets supersede each other; a ring of three breaks both (the ring is beyond the documented
limit, which leaves one version current).

Reproduction: embedded runtime, no embedder, one user and agent, sessions s0..s3 on days 0..3. Deliver one at a time
(each derived before the next) in time order into one data dir and as day 1, day 2, day 3, day 0 into another; read
the L4 facets; search the persona lexically.

Expected: in both data dirs exactly one facet is current (water), following ``superseded_by`` from any facet ends at
a current one (no ring), and a lexical recall returns the water facet.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning now, actually."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning instead, actually."


DAY0, DAY1, DAY2, DAY3 = said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER), said_on(3, TEA)


def _ringed(data_dir: Path) -> list[str]:
    """Facets whose ``superseded_by`` chain never reaches a current facet."""
    links = {str(r["memory_id"]): r["superseded_by"] for r in rows(
        data_dir, "SELECT memory_id, superseded_by FROM memories WHERE layer = 'L4'")}
    ringed = []
    for start in links:
        seen, at = set(), start
        while links.get(at) is not None and at not in seen:
            seen.add(at)
            at = str(links[at])
        if at in seen:
            ringed.append(start)
    return ringed


async def test_four_statements_never_leave_their_facets_in_a_ring(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    in_time, late = await in_each_order(s, tmp_path / "orders", [], [("in-time", [DAY0, DAY1, DAY2, DAY3]),
                                                                     ("first-last", [DAY1, DAY2, DAY3, DAY0])])
    assert current_statements(in_time) == [WATER]
    assert _ringed(in_time) == []
    # actual: [] — coffee superseded by water, water by tea, tea by coffee
    assert _ringed(late) == [], ("a supersession ring", current_statements(late))
    assert current_statements(late) == [WATER]


async def test_recall_keeps_the_persona_whatever_the_arrival_order(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (rt, app):
        for turn in (DAY1, DAY2, DAY3, DAY0):
            await rt.publish([turn])
            await rt.run_until_idle()
        hits = [h.content for h in app.search(SCOPE, "s0", "prefer tea coffee water morning", preset_name="lexical",
                                              top_k=20).hits if h.layer == "L4"]
    # actual: [] — every facet version of the preference is superseded
    assert len(hits) == 1 and WATER in hits[0], hits
