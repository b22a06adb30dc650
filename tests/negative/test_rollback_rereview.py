"""A rollback keeps a reviewer's verdict given after the rolled-back decision, also when the memory had another
reviewer's verdict before it (the decision's audit ``new`` value then holds a ground_truth verdict too: 4345f14
kept only a verdict where ``new`` held none, so a rejection after an approved supersession was lost by the
rollback, the memory back approved and active). reviewed_before=False fails on 777ede0, True on 4345f14 too."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "I prefer dark mode in every editor.", session="s1"),
         make_turn(2, "I prefer light mode in every editor.", session="s2")]  # a held (deferred) supersede


@pytest.mark.parametrize("reviewed_before", [False, True])
async def test_rollback_keeps_a_review_given_after_the_decision(settings: Settings, tmp_path: Path,
                                                               reviewed_before: bool) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish(TURNS)
        await rt.run_until_idle()
        (action,) = rows(s.data_dir, "SELECT action_id, target_ids FROM held_actions WHERE status='pending' "
                         "AND action='supersede'")
        old_id, _new_id = orjson.loads(action["target_ids"])
        if reviewed_before:
            await app.review_decide(SCOPE, old_id, "approve")  # a first verdict, before the decision
            await rt.run_until_idle()
        await app.review_decide(SCOPE, action["action_id"], "approve")  # the decision: old_id superseded
        await rt.run_until_idle()
        await app.review_decide(SCOPE, old_id, "reject")  # a second verdict, after the decision
        await rt.run_until_idle()
        sql = "SELECT trust_status, trust_method, lc_state, superseded_by FROM memories WHERE memory_id=?"
        (rejected,) = rows(s.data_dir, sql, (old_id,))
        assert (rejected["trust_status"], rejected["lc_state"]) == ("contradicted", "rejected")
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["step"] == "applied"}
        await app.rollback(SCOPE, decision, "too eager")
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, sql, (old_id,))
    assert after["superseded_by"] is None  # the supersession is undone
    # the reviewer's rejection, given after the decision, stands
    assert (after["trust_status"], after["lc_state"]) == ("contradicted", "rejected"), after
