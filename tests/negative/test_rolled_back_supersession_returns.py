"""A supersession an operator rolled back comes back when the correction's atom is approved after a rejection.

bc3da3b: a reviewer's rejection of a correction's atom releases the facet version it superseded
(``release_superseded``, actor "review"), and approving the atom again supersedes that version again
(``ShardTx.superseded_again``): it looks for the latest audit row in which the actor "review" released the
version from the approved facet, and writes the supersession columns of that row's *old* image back. It never
asks whether the supersession decision itself was rolled back in between: ``governance.rollback`` of the
supersede decision, applied while the old version was released, keeps the supersession group as it is (it
"changed since": ``changed_since``), records the decision ``rolled_back`` and removes its SUPERSEDES edge; the
later approval then puts ``superseded_by`` back anyway, with no edge and no decision behind it.

The same three operations in the other order (reject, approve, then roll back) leave the old version current:
the final state depends on the order of a rollback and a review that are about different things.

What a user expects (README, Lifecycle: a rollback restores the rows a decision changed; a reviewer's verdict
on an atom is about the atom): the operator said "dark mode is not superseded by light mode"; approving the
light-mode atom afterwards makes it a trusted statement again, but does not silently re-apply the decision
that was rolled back. Expected: after reject → rollback(supersede) → approve, the dark-mode facet is not
superseded (as after reject → approve → rollback), or at least the supersession is backed by a decision.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.rows import rows
from tests.support.turns import SCOPE

DARK = "I prefer dark mode in every editor."
LIGHT = "I prefer light mode in the editor now, actually."
_FACET = "SELECT superseded_by FROM memories WHERE layer='L4' AND content LIKE ?"


def _atom(settings: Settings, content: str) -> str:
    (found,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND content=?", (content,))
    return str(found["memory_id"])


def _supersede(app: object) -> str:
    (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE)  # type: ignore[attr-defined]
                   if e["decision"] == "supersede"}
    return str(decision)


async def _history(settings: Settings, name: str, order: list[str]) -> tuple[object, list[dict[str, object]]]:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir.parent / name})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await say(rt, 1, DARK, "a")
        await say(rt, 3, LIGHT, "b")
        assert rows(s.data_dir, _FACET, ("%dark mode%",))[0]["superseded_by"] is not None
        decision = _supersede(app)
        for step in order:
            if step == "rollback":
                await app.rollback(SCOPE, decision)
            else:
                await app.review_decide(SCOPE, _atom(s, LIGHT), step)
            await rt.run_until_idle()
        dark = rows(s.data_dir, _FACET, ("%dark mode%",))[0]["superseded_by"]
        edges = rows(s.data_dir, "SELECT edge_type FROM graph_edges WHERE edge_type='SUPERSEDES'")
    return dark, edges


async def test_an_approval_does_not_bring_back_a_rolled_back_supersession(settings: Settings) -> None:
    late, late_edges = await _history(settings, "rollback-between", ["reject", "rollback", "approve"])
    early, _ = await _history(settings, "rollback-last", ["reject", "approve", "rollback"])
    assert early is None  # the control: rolled back last, the dark-mode facet is current
    assert late is None, ("the rolled-back supersession is back after the approval", late, late_edges)
