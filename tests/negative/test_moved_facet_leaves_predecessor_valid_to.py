"""A persona version whose first saying goes (its session erased, its atom rejected) moves onto a later saying, but
the version it superseded stays valid only until the saying that went: no version of the facet is valid between
the two, and the replay of the erasure differs from its source.

Finding: tea (day 0), "coffee … now, actually" (day 1, session s1) and the same coffee statement again (day 2,
session s2). Coffee supersedes tea: tea is valid until day 1 (``supersede``,
altm/pipeline/writer/ops/governance.py:65-66: ``valid_to`` = the new version's ``valid_from``). When s1 goes the
coffee facet is kept on the day-2 atom (``facet_recited``, altm/pipeline/writer/ops/memory.py:354-365): its
``valid_from`` moves to day 2. Govern places it again (``_replace`` → ``_place`` → ``_step_back``,
altm/pipeline/processors/govern.py:218-238, 281-312) and proposes "coffee supersedes tea" once more
(govern.py:310-311), but the writer answers UNCHANGED to a supersession already in place
(governance.py:57-58) and never moves tea's ``valid_to`` to coffee's new ``valid_from``; nothing else does
(``_placed_later``, altm/pipeline/writer/ops/erasure.py:129-143, handles only a superseder placed *before* the
moved facet). So tea is valid until day 1 and coffee from day 2: as of day 1.5 the user has no preference at
all, in a bitemporal store that says "valid in the world". A store that never heard s1 (the replay of the log,
which cannot open it) closes tea at day 2: ``memories`` and ``governance_events`` (the "valid until" the
supersede's applied step records) differ, and the state hash with them. A reviewer who rejects the day-1 atom
(the repeat said to another agent) leaves the same gap, where rejecting it first closes tea at day 2.

Reproduction: embedded runtime, no embedder, ``retired_key_grace_s=0``; ``said_on`` days 0, 1, 2 (the day-2
repeat to agent reviewer for the review case), each derived before the next; ``erase(SCOPE, "session",
session_id="s1")``, or ``review_decide(day-1 coffee atom, "reject")``; read both facets' valid intervals.

Expected: tea valid until coffee's new ``valid_from`` (day 2), as in a store that never had the day-1 saying,
and the replay equal to the source (e.g. a supersession already in place whose newer version's ``valid_from``
moved closes the older one again at that time, audited).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."


def _facets(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The tea and coffee facets by name: valid_from, valid_to."""
    return {("coffee" if "coffee" in str(r["content"]) else "tea"): r for r in rows(
        data_dir, "SELECT content, valid_from, valid_to FROM memories WHERE layer = 'L4'")}


async def test_erasing_the_first_saying_of_a_correction_closes_the_version_before_it_at_the_next_saying(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, COFFEE)):
            await rt.publish([turn])
            await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    assert current_statements(s.data_dir) == [COFFEE]
    facets = _facets(s.data_dir)
    # actual: tea valid until day 1, coffee valid from day 2 — nothing valid in between
    assert facets["tea"]["valid_to"] == facets["coffee"]["valid_from"], facets
    # actual: memories (tea's valid_to) and governance_events differ
    await replayed_equal(s, tmp_path / "replayed")


async def test_rejecting_the_first_saying_of_a_correction_closes_the_version_before_it_at_the_next_saying(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA), said_on(1, COFFEE), said_on(2, COFFEE, REVIEWER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        [atom] = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's1'")
        await app.review_decide(SCOPE, str(atom["memory_id"]), "reject")
        await rt.run_until_idle()
    assert current_statements(s.data_dir) == [COFFEE]
    facets = _facets(s.data_dir)
    # actual: tea valid until day 1, coffee valid from day 2
    assert facets["tea"]["valid_to"] == facets["coffee"]["valid_from"], facets
