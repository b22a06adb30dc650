"""Review rt27 of bc38099 (max_scored): the newest-N rowid floor is read over the FTS expression alone (the scope
groups), without the policy's time predicate. Rows the SQL predicate then drops (valid after ``as_of``, recorded
after ``known_at``, superseded, rejected, forgotten, merged) are counted among the newest N, so a time-travel
query of common words, once more than ``max_scored`` newer rows hold them, scores none of the rows it may see.

Expected: ``search(as_of=T)`` finds what was said before T however much was said since (it did before).

Now the floor is read with the main query's whole filter (time, lifecycle, scope): the newest ``max_scored`` rows
the query admits."""

from __future__ import annotations

from datetime import timedelta

import pytest

from altm.core import Settings
from altm.recall.retrieval import PRESETS
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0, make_turn


@pytest.fixture(autouse=True)
def _scored_at_most_100(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PRESETS, "conversation", PRESETS["conversation"].model_copy(update={"max_scored": 100}))


async def test_an_as_of_query_of_common_words_finds_what_was_said_before(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, f"The deadline for billing item {i} moved.", session=f"s{i % 20}") for i in range(300)]
    async with store_with(s, turns) as (_rt, app):
        then = T0 + timedelta(minutes=50, seconds=30)  # turns 0..50 had been said
        hits = app.search(SCOPE, "s1", "deadline billing", preset_name="conversation", as_of=then).hits
        uncapped = PRESETS["conversation"].model_copy(update={"max_scored": 100_000})
        PRESETS["conversation"] = uncapped
        before = app.search(SCOPE, "s1", "deadline billing", preset_name="conversation", as_of=then).hits
    assert len(before) == 10  # what the query found without the cap
    assert len(hits) == 10, (
        f"as_of T0+50min: {len(hits)} hits with max_scored=100 (300 turns hold the words, 249 of them after T): "
        "the newest-100 floor was read without the time predicate")
