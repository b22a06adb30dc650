"""A rollback of an unrelated lifecycle decision wipes a contradiction verify found after it.

"Our deploy day is Tuesday." (M) is marked harmful once: the lifecycle demotes it (a governance decision,
audited with M's whole row). The user then corrects it: "Actually, the deploy day is Thursday now." and verify
marks M ``contradicted``. An operator rolls the demotion back ("too eager"). ``_restore_memory`` puts back
every column of the audited pre-demotion row, the trust verdict included (it keeps only a *reviewer's* verdict
given since), so M is ``unverifiable`` again: recall no longer flags or down-weights the outdated deploy day,
the review queue loses it, and nothing re-judges the subject (verify ignores rollback changes). Rolled back
before the correction, M ends ``contradicted``: the final verdict depends on the order of the two events.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

_SQL = ("SELECT memory_id, trust_status, trust_method, trust_contradicting_id, lc_state FROM memories "
        "WHERE layer='L2' AND content=?")


async def test_a_rollback_of_a_demotion_keeps_a_contradiction_found_since(settings: Settings,
                                                                          tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "Our deploy day is Tuesday.", session="s1")])
        await rt.run_until_idle()
        (m,) = rows(s.data_dir, _SQL, ("Our deploy day is Tuesday.",))
        await app.feedback(SCOPE, [m["memory_id"]], "harmful")  # weight 0.57: demoted (a decision)
        await rt.run_until_idle()
        (demotion,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "demote"}
        await rt.publish([make_turn(2, "Actually, the deploy day is Thursday now.", session="s2")])
        await rt.run_until_idle()
        (corrected,) = rows(s.data_dir, _SQL, ("Our deploy day is Tuesday.",))
        assert (corrected["trust_status"], corrected["lc_state"]) == ("contradicted", "demoted"), corrected
        await app.rollback(SCOPE, demotion, "too eager")
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, _SQL, ("Our deploy day is Tuesday.",))
        queue = app.review_queue(SCOPE)["memories"]
    assert after["lc_state"] == "active"  # the demotion is undone
    # ...but not the correction the user made after it
    assert (after["trust_status"], after["trust_contradicting_id"]) == (
        "contradicted", corrected["trust_contradicting_id"]), after
    assert [q["memory_id"] for q in queue] == [m["memory_id"]]
    await replayed_equal(s, tmp_path / "replayed")
