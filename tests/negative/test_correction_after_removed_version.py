"""A correction said after the version just before it went (its facet forgotten by retention, or erased by its id)
supersedes nothing: the version before that one, current again, stays current beside the correction.

Finding: ``GovernProcessor._step_back`` (altm/pipeline/processors/govern.py:216-240) takes as the previous version
the statement said last before this one among the user's *atoms* (``prior = max(before, key=order)``,
govern.py:224-227). When that statement's facet was removed since it was last said, ``_made`` returns None
(``reader.removed_since``, govern.py:267-271: "retention forgot it or an erasure took it: it stays gone") and
``_step_back`` returns without a step (govern.py:232-233). It never looks further back, and the stored-facet
fallback (govern.py:228-231) runs only when no earlier atom exists at all. But the removal of that facet made the
version it had superseded current again (``release_superseded``: "a pinned older version is current again once
nothing newer is left"), so that version is the user's current persona value when the correction comes, and
the correction leaves it current.

Two ways to get there, each with every atom kept:

- tea (day 0, pinned by the user), "coffee … now, actually" (day 1), an L4 retention pass of 30 days at day 50:
  the coffee facet is forgotten, the pinned tea is current again (right: nothing newer is left). "water …
  instead, actually" (day 100) then leaves tea current beside water;
- tea (day 0), coffee (day 1), the coffee facet erased by its id (``erase(..., "memory", memory_id=...)``): tea
  is current again. Water (day 80) leaves tea current beside it.

Reproduction: embedded runtime, no embedder, one user and agent, sessions ``s<day>`` (``said_on``), each turn
derived before the next; read the current L4 facets (``superseded_by`` NULL, not rejected).

Expected: the correction replaces the version current before it: water is the only current version (e.g.
``_step_back`` skips a removed statement and takes the one placed before it, or the current stored facets, as
the previous version).
"""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.facets import current_statements, memory_id_of, said_on
from tests.support.memories import store_with
from tests.support.turns import SCOPE, T0

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning instead, actually."


async def test_a_correction_after_retention_forgot_the_version_before_it_replaces_the_pinned_one(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    async with store_with(s, [said_on(0, TEA)]) as (rt, app):
        await app.feedback(SCOPE, [memory_id_of(s.data_dir, "L4", TEA)], "pin")
        await rt.run_until_idle()
        await rt.publish([said_on(1, COFFEE)])
        await rt.run_until_idle()
        assert await app.admin.retention(T0 + timedelta(days=50)) == 1  # the coffee facet (tea pinned)
        await rt.run_until_idle()
        assert current_statements(s.data_dir) == [TEA]  # nothing newer left: the pinned tea is current again
        await rt.publish([said_on(100, WATER)])
        await rt.run_until_idle()
    # actual: [TEA, WATER] — water's previous version is the forgotten coffee, so it supersedes nothing
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)


async def test_a_correction_after_the_version_before_it_was_erased_replaces_the_one_current_again(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, TEA), said_on(1, COFFEE)]) as (rt, app):
        assert current_statements(s.data_dir) == [COFFEE]
        await app.erase(SCOPE, "memory", memory_id=memory_id_of(s.data_dir, "L4", COFFEE))
        await rt.run_until_idle()
        assert current_statements(s.data_dir) == [TEA]
        await rt.publish([said_on(80, WATER)])
        await rt.run_until_idle()
    # actual: [TEA, WATER]
    assert current_statements(s.data_dir) == [WATER], current_statements(s.data_dir)
