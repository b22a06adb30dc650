"""An agent erasure drops the demotion an unpin made, though the unpin itself is kept (and replayed).

Finding: pins and unpins are now the user's curation, sealed under the user's key and kept by an erasure of the
agent whose scope carried them (``altm/bus/sealing/_sealer.py`` ``_is_curation``; ``ShardTx.erase_records``
leaves ``kind IN ('pin', 'unpin')`` alone). But the decisions made on them are still dropped as decisions "made
on a signal the erased agent sent": ``ShardTx._drop_decisions_sent`` → ``_made_on`` matches any decision whose
``sender.agent_id`` is the erased agent, whatever the signal's kind. An unpin of a harmful memory demotes it
(``ops/lifecycle.signal`` records a ``demote`` decision naming the unpin as its signal and the agent as its
sender): after the erasure the memory stays unpinned and demoted, the unpin stays counted, yet the demotion has
no record any more: the governance history shows no reason for the state, and the demotion cannot be rolled back
("no governance decision"). ``_drop_decisions_sent``'s own rationale ("a replay, which never counted those
signals, never made them") no longer holds for a pin or unpin: a replay reads it (user key) and makes the
decision too (it drops it only because it repeats the same erasure).

Here agent ``reviewer`` hears a preference (facet F) and marks it harmful twice (F demoted); dana pins F from
``coder``'s scope (F active), then unpins it from there (F demoted again: a ``demote`` decision sent by
``coder``); agent ``coder`` is erased.

Expected: a decision made on a pin or unpin outlives the erasure of the agent whose scope carried it, as the
signal does: the demotion keeps its record (and can be rolled back), in the source and in its replay.
"""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
_STATE = "SELECT lc_state, lc_pinned FROM memories WHERE memory_id=?"
_DEMOTIONS = "SELECT DISTINCT decision_id FROM governance_events WHERE decision='demote' AND agent_id='coder'"


async def test_an_unpins_demotion_outlives_the_erasure_of_the_agent_that_carried_it(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(1, "I prefer dark mode in every editor.", session="b", scope=REVIEWER),
             make_turn(2, "We decided to deploy the billing service on Tuesdays.", session="a")]
    async with store_with(s, turns) as (rt, app):
        (facet,) = app.list_memories(SCOPE, layer="L4")
        mid = str(facet["memory_id"])
        for _ in range(2):
            await app.feedback(REVIEWER, [mid], "harmful")
            await rt.run_until_idle()
        assert rows(s.data_dir, _STATE, (mid,)) == [{"lc_state": "demoted", "lc_pinned": 0}]
        for kind in ("pin", "unpin"):  # dana (a user key) curates the facet from coder's scope
            await app.feedback(SCOPE, [mid], kind)
            await rt.run_until_idle()
        assert rows(s.data_dir, _STATE, (mid,)) == [{"lc_state": "demoted", "lc_pinned": 0}]
        assert len(rows(s.data_dir, _DEMOTIONS)) == 1, "the unpin made no decision: scenario does not apply"
        await app.erase(SCOPE, "agent")  # coder goes; F stands on reviewer's atom
        await rt.run_until_idle()
        assert rows(s.data_dir, _STATE, (mid,)) == [{"lc_state": "demoted", "lc_pinned": 0}]
        kept = rows(s.data_dir, _DEMOTIONS)
    assert len(kept) == 1, "the erasure dropped the record of the demotion the (kept) unpin made"
    await replayed_equal(s, tmp_path / "replay")
