"""A replacement held for review the other way round than its two versions are placed, once an earlier saying of
one arrived, stays pending: the queue offers to replace the correction by the value it corrected.

Finding (the facet-removal fuzz of the sixth session, seed 537, reduced): "I prefer coffee in the morning." said
on day 7 arrives first, then "I prefer juice in the morning now, actually." (day 6): placed before coffee, juice is
replaced by coffee, held for review (no correction cue on coffee: ``_version_step``,
altm/pipeline/processors/govern.py). Then coffee said on day 5 arrives: coffee's first saying is now before juice,
and juice, a correction, supersedes it (``_step_forward``). The held "replace juice by coffee" was left pending:
``_place`` released stale *supersessions* of the version it placed but not held replacements. Time order (coffee on
day 5, juice on day 6, coffee again on day 7: the same version) holds nothing; approving the stale item would
supersede the correction by the value it corrected.

Expected: the pending held actions equal time order's (none): a held replacement of a later-placed version by an
earlier-placed one is void once the placing shows it.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, pending_holds, said_on
from tests.support.orders import in_each_order

COFFEE = "I prefer coffee in the morning."
JUICE = "I prefer juice in the morning now, actually."


async def test_a_held_replacement_against_the_placing_goes_void(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    early, juice, late = said_on(5, COFFEE), said_on(6, JUICE), said_on(7, COFFEE)
    in_time, reversed_ = await in_each_order(s, tmp_path / "orders", [], [("in-time", [early, juice, late]),
                                                                          ("reversed", [late, juice, early])])
    assert current_statements(in_time) == [JUICE] and pending_holds(in_time) == 0
    assert current_statements(reversed_) == [JUICE]
    assert pending_holds(reversed_) == 0  # before the fix: 1, "replace juice by coffee"
