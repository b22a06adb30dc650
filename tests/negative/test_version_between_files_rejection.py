"""A version that arrives between two already governed files a "conflict" rejection in the user's review queue,
which neither time order nor one delivery of the same turns files.

Finding: README documents that such a version leaves the earliest superseded by the latest (a known limit of the
current facets). Beyond that state, ``GovernProcessor._facet``'s backward step (altm/pipeline/processors/
govern.py:199-207) proposes "earliest superseded by the one between" although the earliest facet is already
superseded by the latest; the writer's ``supersede`` refuses it (altm/pipeline/writer/ops/governance.py:56-57:
"mem_… is already superseded by mem_…", code "conflict") and the refusal is stored as a rejection, an item a
reviewer is asked about. With coffee (day 0, no cue), "water instead, actually" (day 1) and "coffee now, actually"
(day 2) delivered as day 0, day 2, day 1, the day-1 statement's backward step targets the day-0 facet, superseded
on day 2's arrival. The same turns one at a time in time order, or in one publish in the same order, file nothing.
The review queue depends on arrival order (and a replay of that store, one batch, drops the rejection).

Reproduction: embedded runtime, no embedder, sessions s0..s2 on days 0..2, delivered one at a time (each derived
before the next) as day 0, day 2, day 1; read ``rejections``.

Expected: no rejection is filed (the step is skipped, or the older supersession is released to the one between,
as time order has it); the current facet is "coffee now, actually", as in time order.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, rejection_reasons, said_on
from tests.support.orders import in_each_order

COFFEE = "I prefer coffee in the morning."
WATER = "I prefer water in the morning instead, actually."
COFFEE_AGAIN = "I prefer coffee in the morning now, actually."


async def test_a_version_arriving_between_two_governed_files_no_rejection(settings: Settings,
                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    day0, day1, day2 = said_on(0, COFFEE), said_on(1, WATER), said_on(2, COFFEE_AGAIN)
    in_time, between = await in_each_order(s, tmp_path / "orders", [], [("in-time", [day0, day1, day2]),
                                                                        ("between", [day0, day2, day1])])
    assert current_statements(in_time) == [COFFEE_AGAIN]
    assert rejection_reasons(in_time) == []
    assert current_statements(between) == [COFFEE_AGAIN]  # the documented limit leaves this as it should be
    # actual: ["mem_… is already superseded by mem_…"]
    assert rejection_reasons(between) == [], rejection_reasons(between)
