"""A forget's rollback puts a node's old row over the node made again since (red-team review of the graph).

"the exporter broke again on monday." (day 0) is forgotten by retention; the Time node "monday" it alone held
goes with it (README: "graph edges that stood only on forgotten memories go (with the nodes only they held)").
Then "We shipped it again on Monday." makes the node again, spelled "Monday". An operator rolls the forget back:
both messages are stored, so the node should be what the writer makes of both spellings, the least one,
"Monday" (``_put_node``: "the stored spelling and method are the least of those seen … so the row does not
depend on the order proposals arrive in"), as in a store that never forgot. The rollback writes the audited
row back whole instead, and the node is named "monday", a spelling no proposal order gives for these two
messages. README (Lifecycle): "a rollback restores the prior rows from the audit log, except what changed
since the decision"; here the node changed since and the rollback overwrote it.
Expected: after the rollback, the node is the merge of the restored row and the current one (least name and
method, merged attributes), as ``_put_node`` would make it.
Suspected cause: ``altm/store/_shard_tx.py`` ``ShardTx.restore`` (the generic ``graph_nodes`` branch:
``self._put_row(table, key, old, current, ...)`` replaces ``current`` by ``old``)."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

FORGOTTEN = make_turn(1, "the exporter broke again on monday.", session="s1")
KEPT = make_turn(2, "We shipped the invoice exporter on Friday.", session="s2").model_copy(
    update={"timestamp": T0 + timedelta(days=50)})
LATER = make_turn(3, "We shipped it again on Monday.", session="s3").model_copy(
    update={"timestamp": T0 + timedelta(days=61)})
NODES = "SELECT node_type, name FROM graph_nodes WHERE node_type='Time' ORDER BY name"


def _retention(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                       "data_dir": settings.data_dir.parent / name})


async def _never_forgotten(settings: Settings, turns: list[TurnEvent]) -> list[dict[str, object]]:
    async with store_with(settings, turns):
        return rows(settings.data_dir, NODES)


async def test_a_rolled_back_forget_merges_the_node_made_again_since(settings: Settings) -> None:
    s = _retention(settings, "rolled-back")
    async with store_with(s, [FORGOTTEN, KEPT]) as (rt, app):
        assert await app.admin.retention(T0 + timedelta(days=60)) > 0
        await rt.run_until_idle()
        assert ("Time", "monday") not in {(r["node_type"], r["name"]) for r in rows(s.data_dir, NODES)}
        await rt.publish([LATER])
        await rt.run_until_idle()
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision)
        await rt.run_until_idle()
        kept = {r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")}
        after = rows(s.data_dir, NODES)
    assert {FORGOTTEN.content, LATER.content} <= kept  # the rollback gave the message back
    never = await _never_forgotten(_retention(settings, "never"), [FORGOTTEN, KEPT, LATER])
    assert never == [{"node_type": "Time", "name": "Friday"}, {"node_type": "Time", "name": "Monday"}]
    assert after == never  # actual: the Time node is 'monday', the rolled-back row written over 'Monday'
