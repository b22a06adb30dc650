"""A statement whose earlier saying arrives after its later one keeps the supersession the later saying made: a
statement the user made *after* it stays superseded by it, although in time order it was never replaced.

Finding: a facet version is one per statement (``facet_version``, altm/pipeline/processors/facets.py:24-33) and is
placed in time by the earliest of its atoms stored so far (``first``, altm/pipeline/processors/govern.py:188-191).
With the turns delivered as water (day 1, no correction cue), tea (day 2, "now, actually"), tea (day 0):

1. the day-2 tea is governed while its only atom is the day-2 one: ``earlier`` = [water], so the backward step
   supersedes water by tea (govern.py:199-207; the tea sentence carries a correction cue);
2. the day-0 tea is governed: ``first`` moves to day 0 and the facet's upsert moves its valid time there, so tea
   now comes *before* water; the forward step (govern.py:216-225) proposes "tea replaced by water", which is held
   for review (water has no correction cue) — but nothing releases step 1's "water superseded by tea", which now
   points from a later statement to an earlier one. The writer's release of a reversed supersession
   (altm/pipeline/writer/ops/governance.py:59-61) runs only when a supersession the other way round is *applied*,
   and a held one is not.

Water stays out of recall. In time order (tea day 0, water day 1, tea day 2) water's replacement of tea is held for
review and the day-2 tea is one facet with the day-0 one: both tea and water are current. Nothing here arrives
"between two already governed" versions (the documented limit): the day-0 saying comes before both.

Reproduction: embedded runtime, no embedder, one user and agent, sessions s0/s1/s2 on days 0/1/2. Deliver one at
a time (each derived before the next) in time order into one data dir and as day 1, day 2, day 0 into another;
read the current L4 facets (``superseded_by`` NULL, not rejected).

Expected: both data dirs hold the same current facets (tea and water), and no rejection is filed.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.orders import in_each_order
from tests.support.rows import rows

TEA = "I prefer tea in the morning now, actually."
WATER = "I prefer water in the morning."


async def test_an_earlier_saying_arriving_last_releases_what_its_later_saying_superseded(settings: Settings,
                                                                                         tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    day0, day1, day2 = said_on(0, TEA), said_on(1, WATER), said_on(2, TEA)
    in_time, late = await in_each_order(s, tmp_path / "orders", [], [("in-time", [day0, day1, day2]),
                                                                     ("earliest-last", [day1, day2, day0])])
    assert current_statements(in_time) == sorted([TEA, WATER])
    # actual: [TEA] — water (said on day 1, after the day-0 tea) stays superseded by tea
    assert current_statements(late) == current_statements(in_time), (current_statements(late),
                                                                       current_statements(in_time))
    assert rows(late, "SELECT reason FROM rejections") == []
