"""Rejecting the first saying of a persona version the *same* agent heard again later leaves the facet on the
repeat but still superseded by the correction said between them: valid until before it is valid from, and not
current, where rejecting that saying first leaves it current.

Finding: tea (day 0, session s0), "coffee … now, actually" (day 1, s1), tea again (day 2, s2), all to agent coder.
The day-2 atom is an exact duplicate of the day-0 atom and folds into it (``_merge_duplicates``,
altm/pipeline/processors/govern.py:180-196: ``superseded_by`` = the day-0 atom, state ``merged``). A reviewer
then rejects the day-0 atom. ``_facets_following`` (altm/pipeline/writer/ops/governance.py:228-265) re-cites the
tea facet on the earliest atom nobody rejected, ``facet_recited``, which takes the merged day-2 atom: the facet's
valid time moves to day 2 while ``superseded_by`` = coffee and ``valid_to`` = day 1 stay. Govern takes the moved
facet (``_moved_facet``, govern.py:91-98) but ``_replace`` (govern.py:218-238) looks for its sayings among atoms
with ``superseded_by is None`` only: the day-2 atom is still merged into the rejected one (a rejection releases
no duplicate folded into the atom before it; an erasure or a forget does, ``release_superseded``), so ``said`` is
empty and it takes the "none of its atoms is left" branch, which only steps forward: the supersession by coffee,
said before the facet's new first saying, is never released (the release e06777f added in ``_place``,
govern.py:269-272, is not reached). The d2 atom also stays folded into the rejected atom, out of recall (the
README's "no duplicate folds into a rejected atom" holds only for one said after the rejection). With the repeat
by another agent (no merge) the same rejection is handled (``test_recited_facet_keeps_stale_supersession.py``).

Reproduction: embedded runtime, no embedder, one agent, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each
derived before the next; ``review_decide(day-0 tea atom, "reject")`` after them, and, in a second data dir,
right after day 0. Read the current L4 facets (``superseded_by`` NULL, not rejected), the pending held actions
and each facet's valid interval.

Expected: as rejecting the day-0 atom first: tea (from day 2) and coffee current, "coffee replaced by tea" held
for review, no facet valid until before it is valid from (e.g. the rejection releases the duplicates folded into
the rejected atom, so govern folds them again into the earliest left and places the facet at that saying).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, inverted_facets, pending_holds, said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."


async def _rejected_first_saying(settings: Settings, *, early: bool) -> tuple[list[str], int]:
    def day0_atom() -> str:
        return str(rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's0'")
                   [0]["memory_id"])

    async with store_with(settings, [said_on(0, TEA)]) as (rt, app):
        if early:
            await app.review_decide(SCOPE, day0_atom(), "reject")
            await rt.run_until_idle()
        for turn in (said_on(1, COFFEE), said_on(2, TEA)):
            await rt.publish([turn])
            await rt.run_until_idle()
        if not early:
            assert current_statements(settings.data_dir) == [COFFEE]
            await app.review_decide(SCOPE, day0_atom(), "reject")
            await rt.run_until_idle()
    return current_statements(settings.data_dir), pending_holds(settings.data_dir)


async def test_rejecting_the_first_saying_of_a_version_its_agent_repeated_ends_as_rejecting_it_first(
        settings: Settings, tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none"})
    first = await _rejected_first_saying(base.model_copy(update={"data_dir": tmp_path / "early"}), early=True)
    assert first == (sorted([COFFEE, TEA]), 1), first
    late = base.model_copy(update={"data_dir": tmp_path / "late"})
    last = await _rejected_first_saying(late, early=False)
    # actual: [{tea, valid_from day 2, valid_to day 1}] — still superseded by coffee, said the day before it
    assert inverted_facets(late.data_dir) == [], inverted_facets(late.data_dir)
    # actual: ([COFFEE], 0)
    assert last == first, last
