"""A persona version that arrives between two versions already governed takes its place in the chain: the earlier
one is superseded by it, and it by the later one, as in time order.

Before (a documented limit of the fifth session's first fix): the earliest stayed superseded by the latest, and
the one between was superseded by the latest too, so the chain differed from time order (both out of recall,
the current version the same), and the backward step of the version between filed a rejection ("already
superseded"). Govern now releases the earlier version from the later one (``Supersession.release``) and
supersedes it by the version between (altm/pipeline/processors/govern.py ``_facet``).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import said_on
from tests.support.orders import in_each_order
from tests.support.rows import rows

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning instead, actually."


def _chain(data_dir: Path) -> dict[str, str | None]:
    """Each facet's statement → the statement of the facet that supersedes it (None: current)."""
    facets = {str(r["memory_id"]): r for r in rows(data_dir, "SELECT memory_id, content, superseded_by FROM memories "
                                                             "WHERE layer = 'L4'")}
    said = {mid: str(r["content"]).split(": ", 1)[1] for mid, r in facets.items()}
    return {said[mid]: (said[str(r["superseded_by"])] if r["superseded_by"] else None) for mid, r in facets.items()}


async def test_a_version_between_two_governed_ones_is_chained_as_in_time_order(settings: Settings,
                                                                                tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    tea, coffee, water = said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER)
    in_time, between, reverse = await in_each_order(s, tmp_path / "orders", [], [
        ("in-time", [tea, coffee, water]), ("between", [tea, water, coffee]), ("reverse", [water, coffee, tea])])
    assert _chain(in_time) == {TEA: COFFEE, COFFEE: WATER, WATER: None}
    assert _chain(between) == _chain(in_time)
    assert _chain(reverse) == _chain(in_time)
    for data_dir in (in_time, between, reverse):
        assert rows(data_dir, "SELECT reason FROM rejections") == [], data_dir.name
