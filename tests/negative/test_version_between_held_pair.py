"""A persona version that arrives between two versions whose supersede was held for review leaves that held action
pending: the review queue keeps "replace tea by water" although coffee now stands between them, and approving it
files a conflict rejection.

Finding: tea (day 0) and water (day 2, no correction cue) give a held action "tea replaced by water"
(``_version_step``, altm/pipeline/processors/govern.py:275-292). "coffee … now, actually" (day 1) then arrives:
``_step_back`` supersedes tea by coffee and ``_step_forward`` holds "coffee replaced by water"
(govern.py:216-253), as in time order. A supersession between two versions a later one is placed between is
released (``_release``, govern.py:235-237, ``Supersession.release``), but a *held* supersede between them is
left as it is: nothing voids it (held actions go void only when retention forgets what they name,
altm/pipeline/writer/ops/lifecycle.py:147-154). So the review queue has two pending supersedes of water where
time order (tea, coffee, water) has one; a reviewer approving the stale one gets a rejection
("… is already superseded by …", ``supersede``, altm/pipeline/writer/ops/governance.py:59-60). A replay of the
log places the three in one delivery in time order and holds only "coffee replaced by water": ``held_actions``
of the replay differ from the live data dir's (beyond the decision records of a late arrival that the README
calls history).

Reproduction: embedded runtime, no embedder, sessions s0/s1/s2 on days 0/1/2 (``said_on``), delivered one at a
time as day 0, day 2, day 1 into one data dir and in time order into another; list the pending held actions
(their ``inputs`` old/new); replay the first data dir (``replay_into``).

Expected: the same pending held actions as in time order (the held supersede of a pair a version is placed
between is void, or dismissed, when that version is placed), and the replay holds what the source holds.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from altm.core import Settings
from altm.wiring import replay_into
from tests.support.facets import said_on
from tests.support.orders import in_each_order
from tests.support.rows import rows

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning."


def _pending(data_dir: Path) -> list[tuple[str, str]]:
    """The pending held supersedes, as (old statement, new statement)."""
    out = []
    for r in rows(data_dir, "SELECT inputs FROM held_actions WHERE status = 'pending'"):
        inputs = orjson.loads(str(r["inputs"]))
        out.append((str(inputs["old"]).split(": ", 1)[1], str(inputs["new"]).split(": ", 1)[1]))
    return sorted(out)


async def test_a_version_placed_between_a_held_pair_leaves_the_review_queue_of_time_order(settings: Settings,
                                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    tea, coffee, water = said_on(0, TEA), said_on(1, COFFEE), said_on(2, WATER)
    in_time, between = await in_each_order(s, tmp_path / "orders", [], [("in-time", [tea, coffee, water]),
                                                                        ("between", [tea, water, coffee])])
    assert _pending(in_time) == [(COFFEE, WATER)]
    # actual: [(COFFEE, WATER), (TEA, WATER)] — "replace tea by water" stays pending though tea is superseded
    assert _pending(between) == _pending(in_time), _pending(between)


async def test_the_replay_of_a_version_placed_between_a_held_pair_holds_what_the_source_holds(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    [source] = await in_each_order(s, tmp_path / "orders", [], [
        ("between", [said_on(0, TEA), said_on(2, WATER), said_on(1, COFFEE)])])
    replayed = tmp_path / "replayed"
    await replay_into(source, replayed, settings=s.model_copy(update={"data_dir": source}))
    # actual: the source has (TEA, WATER) pending too, the replay only (COFFEE, WATER)
    assert _pending(replayed) == _pending(source), (_pending(replayed), _pending(source))
