"""Rejecting an atom brings back into recall an exact duplicate of it that a reviewer had rejected already: the
order of two rejections decides whether a fact the reviewer rejected twice is still recalled.

Finding: a fact said in two sessions (s0, s1) is two atoms; the s1 atom folds into the s0 one (govern's
``_merge_duplicates``: ``superseded_by`` = the s0 atom, ``lc_state`` ``merged``). A reviewer rejects the s1 atom
(``lc_state`` ``rejected``, still folded), then the s0 atom. Since 5267d0a a rejection of an atom releases the
duplicates merged into it (altm/pipeline/writer/ops/governance.py:218-219, ``tx.release_superseded(...,
actor="review")``), and ``release_superseded`` restores every row folded into it from the audit image of the
merge (altm/store/_tx/_writes.py:222-239 via ``_unsuperseded``, :283-292), lifecycle state included
(``_SUPERSESSION`` = supersession columns + ``lc_state``, :220): the s1 atom comes back ``active`` — its own
rejection, given after the merge, is overwritten by the state it had before the merge, while its verdict stays
``contradicted``. It is in recall again (the current view filters on ``lc_state``), and govern folds nothing
into it or it into anything (``_reviewed_atom`` sees an atom nobody rejected). Rejecting the two atoms in the
other order (s0 first: the s1 atom is released, then rejected) leaves both out of recall. Before 5267d0a a
rejection released nothing, and the s1 atom stayed rejected.

Reproduction: embedded runtime, no embedder, "Our deploy day is Tuesday." said alone on day 0 (s0) and day 1
(s1); ``review_decide(s1 atom, "reject")``, then ``review_decide(s0 atom, "reject")``; in a second data dir the
two rejections in the other order. Read the atoms' ``lc_state`` and search the fact lexically.

Expected: in both orders both atoms stay ``rejected`` and the fact is not recalled (e.g. ``release_superseded``
under a rejection keeps the released row's own ``lc_state`` when it is ``rejected``, or a rejection releases
only the duplicates nobody rejected).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.facets import said_on
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

FACT = "Our deploy day is Tuesday."


async def _rejected_both(settings: Settings, first: str, second: str) -> tuple[dict[str, str], list[str]]:
    """The atoms' states by session and the recalled atoms of the fact after rejecting ``first`` then ``second``."""
    async with store_with(settings, [said_on(0, FACT), said_on(1, FACT)]) as (rt, app):
        atoms = {str(r["session_id"]): str(r["memory_id"]) for r in rows(
            settings.data_dir, "SELECT memory_id, session_id FROM memories WHERE layer = 'L2'")}
        assert sorted(atoms) == ["s0", "s1"], atoms
        for session in (first, second):
            await app.review_decide(SCOPE, atoms[session], "reject")
            await rt.run_until_idle()
        states = {str(r["session_id"]): str(r["lc_state"]) for r in rows(
            settings.data_dir, "SELECT session_id, lc_state FROM memories WHERE layer = 'L2'")}
        recalled = sorted(h.memory_id for h in app.search(SCOPE, "s9", "deploy day Tuesday",
                                                          preset_name="lexical").hits if h.memory_id in atoms.values())
    return states, recalled


async def test_a_rejection_leaves_a_rejected_duplicate_rejected(settings: Settings, tmp_path: Path) -> None:
    base = settings.model_copy(update={"embedder": "none"})
    canonical_first = await _rejected_both(base.model_copy(update={"data_dir": tmp_path / "s0-first"}), "s0", "s1")
    assert canonical_first == ({"s0": "rejected", "s1": "rejected"}, []), canonical_first
    duplicate_first = await _rejected_both(base.model_copy(update={"data_dir": tmp_path / "s1-first"}), "s1", "s0")
    # actual: ({"s0": "rejected", "s1": "active"}, [the s1 atom]) — the reviewer's rejection of s1 is undone
    assert duplicate_first == canonical_first, duplicate_first
