"""A citation or feedback on a memory retention forgot while the cycle was open lands in the review queue.

An agent prepares a turn (its bundle shows the persona facet F), a retention pass forgets F, and the agent
commits, citing F and marking it helpful — the ordinary race of a nightly retention pass with a turn in
flight. The lifecycle turns each into a signal proposal; the writer's ``target_row`` finds no row and no
tombstone (``ALTM_RETENTION_TOMBSTONES`` is off by default) and refuses them as ``unknown_target``: two
rejections "no signalled memory … in scope home …" appear in the user's review queue, items a person must
approve or reject, which say nothing a reviewer can act on (approving one cannot bring F back).

The same signals are void when the forget left a tombstone, or when F was erased (``ops/_base.Erased``), and
the forget itself takes a memory already gone as gone (``test_forget_names_a_gone_memory.py``): what the
review queue shows depends on a storage setting.

Expected: a use signal on a memory that retention forgot is void (counted nowhere, refused nowhere), whatever
``retention_tombstones`` says; the user's review queue stays empty.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from altm.app import Feedback
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0, make_turn


@pytest.mark.parametrize("tombstones", [False, True])
async def test_a_citation_of_a_memory_forgotten_during_the_cycle_is_no_review_item(
        settings: Settings, tombstones: bool) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0,
                                    "retention_tombstones": tombstones})
    async with store_with(s, [make_turn(1, "I prefer dark mode in every editor.", session="a")]) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "a", "a-t3", "Which editor mode do I prefer, dark?", 800)
        facets = [item.memory_id for item in prepared.bundle.items if item.layer == "L4"]
        assert len(facets) == 1, prepared.bundle.items
        await rt.run_until_idle()
        assert await app.admin.retention(T0 + timedelta(days=90)) == 1
        await rt.run_until_idle()
        assert app.list_memories(SCOPE, layer="L4") == []
        await app.commit_turn(prepared.cycle_id, "Dark mode.", facets, Feedback(helpful=facets))
        await rt.run_until_idle()
        queue = app.review_queue(SCOPE)
    assert queue["rejections"] == [], [r["reason"] for r in queue["rejections"]]
