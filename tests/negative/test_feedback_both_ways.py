"""commit_turn accepts feedback that marks the same memory both helpful and harmful, and counts both.

``commit_turn`` checks that every id of ``feedback.helpful`` and ``feedback.harmful`` was in the cycle's bundle, but not
that the two lists are disjoint. ``Feedback(helpful=[m], harmful=[m])`` is published as one control event and the
lifecycle counts a ``helpful`` *and* a ``harmful`` signal for ``m`` (with the citation and the injection: weight
(1 + 0.15 + 0.25 + 0.01) / 1.75 = 0.806, flagged as harmful in bundles), so a host bug or a confused caller
silently moves a memory's weight in a direction nobody asked for, and the committed turn cannot be corrected (a
retry with the right feedback is an idempotency conflict).

Expected: contradictory feedback for one memory is refused with a clear error (as ids outside the bundle are, with
``CitationError``) and the cycle stays open, nothing published.
"""

from __future__ import annotations

import pytest

from altm.app import Feedback
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

PREFERENCE = "I prefer tabs over spaces in Python code."


async def test_a_memory_marked_helpful_and_harmful_at_once_is_refused(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, PREFERENCE)]) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s2", "s2-t1", "tabs or spaces in python?", 2000)
        (mid, *_) = prepared.bundle.memory_ids
        refused: Exception | None = None
        try:
            await app.commit_turn(prepared.cycle_id, "Tabs.", cited_memory_ids=[mid],
                                  feedback=Feedback(helpful=[mid], harmful=[mid]))
        except Exception as exc:  # any clear refusal (CitationError, ValueError) will do
            refused = exc
        await rt.run_until_idle()
        (row,) = rows(s.data_dir, "SELECT lc_helpful, lc_harmful, lc_weight FROM memories WHERE memory_id=?",
                      (mid,))
        state = app.find_cycle(prepared.cycle_id).state.value
    if refused is None:
        pytest.fail(f"contradictory feedback accepted: cycle {state}, memory counters {dict(row)}")
    assert state == "prepared" and (row["lc_helpful"], row["lc_harmful"]) == (0, 0), (state, dict(row))
