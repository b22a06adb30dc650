"""A persona version whose atom a reviewer rejects stays named by a pending held supersede: the review queue still
offers "replace coffee by tea" after tea was rejected, and approving it supersedes coffee by the rejected tea, so
the user has no current persona value at all.

Finding: coffee (day 0) and tea (day 1, no correction cue) give the held action "replace coffee by tea"
(``_version_step``, altm/pipeline/processors/govern.py:359-376). A reviewer rejects the tea atom: the tea facet
leaves recall with it (``_facets_following``, altm/pipeline/writer/ops/governance.py:228-265, ``_out_with_evidence``)
but the held actions naming that facet are left pending. Retention makes such held actions ``void``
(``_void_held_actions``, altm/pipeline/writer/ops/lifecycle.py:147-154) and an erasure drops them; a rejection
does neither. Approving the stale item then runs ``supersede`` (``_review_action``,
governance.py:311-336), which checks that both rows exist but not that the new one was rejected
(governance.py:50-74): coffee is closed and superseded by the rejected tea, which is out of recall, so no
version of the facet is current. A store that never heard tea holds coffee alone and an empty queue. With the
sides swapped (the *earlier* version's atom rejected), the queue likewise keeps a supersede of a facet that is
out of recall, which time order never holds.

Reproduction: embedded runtime, no embedder, sessions s0/s1 on days 0/1 (``said_on``), derived; then
``review_decide(tea atom, "reject")``; read the pending held actions; then ``review_decide(held action,
"approve")`` (a reviewer who read the queue before the rejection) and read the current L4 facets
(``superseded_by`` NULL, not rejected).

Expected: after the rejection no pending held action names the rejected version (void, as retention does; back
to pending if the atom is approved again), and approving the stale item leaves coffee current.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import current_statements, said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

COFFEE = "I prefer coffee in the morning."
TEA = "I prefer tea in the morning."


def _atom_id(data_dir: Path, statement: str) -> str:
    found = [str(r["memory_id"]) for r in rows(data_dir, "SELECT memory_id, content FROM memories WHERE layer = 'L2'")
             if r["content"] == statement]
    assert len(found) == 1, (statement, found)
    return found[0]


def _pending(data_dir: Path) -> list[str]:
    return [str(r["action_id"]) for r in rows(data_dir, "SELECT action_id FROM held_actions WHERE status = 'pending'")]


async def test_rejecting_the_newer_version_of_a_held_pair_leaves_no_stale_supersede_to_approve(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, COFFEE), said_on(1, TEA)]) as (rt, app):
        [held] = _pending(s.data_dir)  # replace coffee by tea
        await app.review_decide(SCOPE, _atom_id(s.data_dir, TEA), "reject")
        await rt.run_until_idle()
        assert current_statements(s.data_dir) == [COFFEE]
        queued = _pending(s.data_dir)
        await app.review_decide(SCOPE, held, "approve")  # read from the queue before the rejection
        await rt.run_until_idle()
    # actual: [] — coffee superseded by the rejected tea: no current version of the facet
    assert current_statements(s.data_dir) == [COFFEE], current_statements(s.data_dir)
    # actual: [held] — the queue still offers to replace coffee by the rejected tea
    assert queued == [], queued


async def test_rejecting_the_older_version_of_a_held_pair_takes_its_supersede_out_of_the_queue(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [said_on(0, COFFEE), said_on(1, TEA)]) as (rt, app):
        assert len(_pending(s.data_dir)) == 1
        await app.review_decide(SCOPE, _atom_id(s.data_dir, COFFEE), "reject")
        await rt.run_until_idle()
        assert current_statements(s.data_dir) == [TEA]
    # actual: one pending — "replace coffee by tea", though coffee is out of recall (time order holds none)
    assert _pending(s.data_dir) == [], _pending(s.data_dir)
