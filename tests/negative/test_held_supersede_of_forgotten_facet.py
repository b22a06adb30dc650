"""A held supersede whose facet retention forgot stays pending in the review queue, and approving it fails.

Finding: without a model and without a correction cue, govern holds the supersede of an older persona facet by
a newer one for review (``altm/pipeline/processors/govern.py:208-217``: a ``held_actions`` row naming both facets,
its inputs quoting both statements). When a retention pass forgets the older facet (and its atom),
``ops/lifecycle.forget`` (``altm/pipeline/writer/ops/lifecycle.py:90-146``) repairs evidence, releases
supersessions, drops merges and lifts the holds of forgotten anti-patterns, but never looks at the held actions
that name a forgotten memory (an erasure drops them: ``altm/store/_tx/_erasure.py:241-248``,
``_drop_held_actions_naming``). The item stays ``pending`` in the user's review queue for good, asking to
supersede a memory that no longer exists (its inputs still quote the statement retention forgot); approving it
is refused by ``_review_action`` → ``supersede`` → ``target_row`` ("no superseded memory ... in scope home",
``altm/pipeline/writer/ops/governance.py:255-276``), which files a *second* review item (a rejection) while
the held action is still pending. A reviewer cannot clear it by approving it.

Reproduction: "I prefer dark mode in every editor." at T0 and "I prefer light mode in every editor." at
T0 + 20 days (no correction cue: the supersede is held); ``admin.retention(T0 + 40 days)`` with L2 and L4
retention of 30 days (the dark atom and facet go, the light ones stay); read the review queue; approve the held
action.

Expected: once the memory it would supersede is forgotten, the held action is no longer pending (resolved or
dropped with the forget, as an erasure drops it): the review queue lists no held action, and no review
decision on it files a rejection.
"""

from __future__ import annotations

from datetime import timedelta

import orjson

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in every editor."


async def test_a_held_supersede_of_a_forgotten_facet_leaves_the_review_queue(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l2": 30.0, "retention_days_l4": 30.0})
    light = make_turn(3, LIGHT, session="b").model_copy(update={"timestamp": T0 + timedelta(days=20)})
    async with store_with(s, [make_turn(1, DARK, session="a"), light]) as (rt, app):
        (held,) = app.review_queue(SCOPE)["held_actions"]
        old_id, new_id = orjson.loads(held["target_ids"])
        await app.admin.retention(T0 + timedelta(days=40))
        await rt.run_until_idle()
        stored = {str(r["memory_id"]) for r in rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L4'")}
        assert old_id not in stored and new_id in stored  # the dark facet was forgotten, the light one kept
        pending = app.review_queue(SCOPE)["held_actions"]
        request = await app.admin.review_decide(SCOPE, str(held["item_id"]), "approve")
        await rt.run_until_idle()
        outcome = app.admin.outcome(request)
        rejections = app.review_queue(SCOPE)["rejections"]
    assert pending == [], ("a held supersede of a forgotten memory is still pending review", pending)
    assert outcome.status != "rejected" and rejections == [], (outcome, rejections)
