"""Seeds 624 and 674 of the randomized replay check (``ALTM_REPLAY_SEEDS=600-779``): the source kept a
``forget`` decision of the ``reviewer`` agent that the replay did not have.

Minimal history: the user tells the ``coder`` agent a preference, then tells the ``reviewer`` agent the very
same thing; a retention pass forgets both (one forget per agent); the coder agent (or the coder's session) is
erased; the log is replayed.

The persona facet (L4) is one row whose id is the statement's, and it stands on the earliest atom of the
statement only (``altm/pipeline/processors/facets.py`` ``stands_on``/``facet_version``): in the source, the
coder's. So the coder's forget repairs it and the reviewer's forget does not name it (its inputs list only the
reviewer's capsule as ``repaired``). The erasure then takes the facet (its ``agent_id`` is the coder's and no
atom left states it: ``altm/pipeline/writer/ops/erasure.py`` ``erase``), and the reviewer's forget decision stays.

The replay cannot open the coder's turns (its data key was destroyed), so the facet stands on the reviewer's
atom there, and the reviewer's forget repairs it and names it in its inputs (``repaired``). The erasure takes the
facet in the replay too (the tombstone carried from the source names it: the ``activated`` seeds of
``erase``), and ``ShardTx._drop_decisions_naming`` (``altm/store/_shard_tx.py``, called from
``_scrub_references``) then drops every step of each decision whose inputs name an erased memory: the
reviewer's forget goes. Only ``governance_events`` differs (the memories are the same on both sides).

The replay of the log is the reference: a store that never heard the erased agent has the facet standing on
the reviewer's atom, so the reviewer's forget names it, and a decision that names an erased memory goes with
the erasure. The source's erasure does not see that the forget of the atom its facet would stand on, in such
a store, is a decision naming the facet it erases.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.scenarios import OLD
from tests.support.turns import SCOPE

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
SAID = "I prefer pickle for the session cache, it is simpler."


def _turns() -> list[TurnEvent]:
    return [TurnEvent(scope=SCOPE, session_id="s1", turn_id="s1-t0", role=Role.USER, content=SAID, timestamp=OLD),
            TurnEvent(scope=REVIEWER, session_id="s3", turn_id="s3-t1", role=Role.USER, content=SAID,
                      timestamp=OLD + timedelta(minutes=1))]


@pytest.mark.parametrize("target", ["agent", "session"])
async def test_a_sibling_agents_forget_of_an_erased_facets_statement_replays_the_same(
        settings: Settings, target: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": False})
    async with store_with(s, _turns()) as (rt, app):
        facets = rows(s.data_dir, "SELECT memory_id, agent_id FROM memories WHERE layer='L4'")
        assert [f["agent_id"] for f in facets] == ["coder"]  # the facet stands on the coder's atom
        assert await app.admin.retention(OLD + timedelta(days=400)) > 0
        await rt.run_until_idle()
        forgets = rows(s.data_dir, "SELECT inputs FROM governance_events WHERE decision='forget' "
                                   "AND agent_id='reviewer' AND step='applied'")
        assert len(forgets) == 1
        await app.erase(SCOPE, target, session_id="s1" if target == "session" else None)
        await rt.run_until_idle()
    await replayed_equal(s, s.data_dir.parent / "replayed")


@pytest.mark.parametrize("target", ["agent", "session"])
async def test_a_facet_restated_by_a_third_agent_replays_the_same_after_a_forget_and_an_erasure(
        settings: Settings, target: str) -> None:
    """The same, with a third agent saying it 40 days later, within retention: the source's erasure made the
    facet stand on the third agent's atom, while in the replay the reviewer's forget had left it with no evidence
    (a forget repaired a facet, an erasure re-cited it); a forget now re-cites it as an erasure does."""
    writer = SCOPE.model_copy(update={"agent_id": "writer"})
    turns = [*_turns(), TurnEvent(scope=writer, session_id="s5", turn_id="s5-t1", role=Role.USER, content=SAID,
                                  timestamp=OLD + timedelta(days=40))]
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": False})
    async with store_with(s, turns) as (rt, app):
        assert await app.admin.retention(OLD + timedelta(days=45)) > 0
        await rt.run_until_idle()
        await app.erase(SCOPE, target, session_id="s1" if target == "session" else None)
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, "SELECT agent_id, evidence FROM memories WHERE layer='L4'")
        assert facet["agent_id"] == "writer" and facet["evidence"] != "[]", facet
    await replayed_equal(s, s.data_dir.parent / "replayed")
