"""Approving back a wrongly rejected first saying of a persona value the user repeated after a correction leaves
the old value current beside the correction (with a supersede held for review), where a store in which nothing
was rejected, and the same two reviews before 5267d0a, have the correction alone current.

Finding: tea (day 0, s0), "coffee … now, actually" (day 1, s1), tea again (day 2, s2), one agent: the day-2 atom
folds into the day-0 one and the tea facet is the day-0 version, superseded by coffee. A reviewer rejects the
day-0 atom and then approves it (a mistaken rejection corrected). The rejection now releases the day-2 atom
(altm/pipeline/writer/ops/governance.py:218-219), re-cites the facet on it (``facet_recited``, :276-279) and govern
re-places the moved facet at day 2 (``_moved_facet``/``_replace``, altm/pipeline/processors/govern.py:101-108,
230-250): the supersession by coffee, said before it, is released and "coffee replaced by tea" is held for
review; tea is current. The approval undoes none of it: ``_facets_following`` skips a facet that is not
``rejected`` (governance.py:268-269), so the facet stays on the day-2 atom; govern folds the day-2 atom into the
approved one again (``_reviewed_atom``, govern.py:86-93, 160-161) but places no facet again (the merge's change
reaches no facet logic), so the facet cites an atom merged into another, is dated day 2 and stays current
beside coffee, with the held supersede pending. The same happens with the repeat said to another agent (no
merge). Before 5267d0a the rejection left the facet superseded, and the approval ended with coffee alone current
(the facet was left on the day-2 atom then too: that part is older).

Reproduction: embedded runtime, no embedder, one agent, sessions s0/s1/s2 on days 0/1/2 (``said_on``), each
derived before the next; ``review_decide(day-0 tea atom, "reject")``, then ``"approve"``; in a second data dir
no review. Read the current facets, the pending held actions and the tea facet's cited atoms.

Expected: as with no review: coffee alone current, nothing pending, the tea facet on the day-0 atom (e.g. the
approval re-cites the facets of the approved atom's statement on their earliest saying left and govern places
them again, as it does after the rejection).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."


async def _profile(settings: Settings, *, reviewed: bool) -> tuple[list[str], int, list[str]]:
    """The current statements, the pending held actions and the sessions of the atoms the tea facet cites."""
    async with store_with(settings, [said_on(0, TEA)]) as (rt, app):
        for turn in (said_on(1, COFFEE), said_on(2, TEA)):
            await rt.publish([turn])
            await rt.run_until_idle()
        if reviewed:
            (first,) = rows(settings.data_dir,
                            "SELECT memory_id FROM memories WHERE layer = 'L2' AND session_id = 's0'")
            for decision in ("reject", "approve"):
                await app.review_decide(SCOPE, str(first["memory_id"]), decision)
                await rt.run_until_idle()
    sessions = {str(r["memory_id"]): str(r["session_id"]) for r in rows(
        settings.data_dir, "SELECT memory_id, session_id FROM memories WHERE layer = 'L2'")}
    (tea,) = [r for r in rows(settings.data_dir, "SELECT content, evidence FROM memories WHERE layer = 'L4'")
              if str(r["content"]).endswith(TEA)]
    cited = sorted(sessions[e] for e in orjson.loads(str(tea["evidence"])) if e in sessions)
    pending = len(rows(settings.data_dir, "SELECT action_id FROM held_actions WHERE status = 'pending'"))
    return current_statements(settings.data_dir), pending, cited


async def test_approving_back_a_rejected_first_saying_restores_the_profile(settings: Settings,
                                                                           tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none"})
    untouched = await _profile(base.model_copy(update={"data_dir": tmp_path / "untouched"}), reviewed=False)
    assert untouched == ([COFFEE], 0, ["s0"]), untouched
    approved_back = await _profile(base.model_copy(update={"data_dir": tmp_path / "approved-back"}), reviewed=True)
    # actual: ([COFFEE, TEA], 1, ["s2"]) — tea current beside its correction, on the day-2 atom merged into day 0's
    assert approved_back == untouched, approved_back
