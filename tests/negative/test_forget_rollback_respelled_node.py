"""A forget's rollback writes a respelled node's old name over the spelling a later memory gave it (red-team
review of ``ShardTx._respell_nodes``).

"We moved the exporter to GitHub." (day 0) is forgotten by retention; "the exporter on Github broke." (day 50)
stays, so the forget respells the node "GitHub" → "Github" (the least label of the MENTIONS edges left), an
audited *update* of graph_nodes. Then "We mirror the exporter to GITHUB now." links the node again: "GITHUB",
the least spelling. An operator rolls the forget back: all three messages are stored, so the node should be
what the writer makes of the three spellings, the least one, "GITHUB" (``_put_node``; and the new invariant of
``_respell_nodes``: the name is the least label of the node's MENTIONS edges), as in a store that never forgot.
The rollback writes the respell's audited old row back whole: the node is named "GitHub", a spelling no
proposal order gives for these three messages (README: "a rollback restores the prior rows from the audit log,
except what changed since the decision"; the node changed since). The delete case was fixed with
``node_union`` (test_forget_rollback_node_spelling.py); the update a respell audits was not.
Suspected cause: altm/store/_shard_tx.py ``ShardTx.restore``, the generic ``graph_nodes`` branch: only
``new is None`` merges with ``node_union``; an update (the respell) puts ``old`` over ``current``. Nor is the
node respelled from its MENTIONS labels after the rollback put the edges back.
Fix direction: for graph_nodes, merge ``old`` with ``current`` in the update case too, or respell the touched
nodes from their MENTIONS labels at the end of a rollback."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

FORGOTTEN = make_turn(1, "We moved the exporter to GitHub.", session="s1")
KEPT = make_turn(2, "the exporter on Github broke.", session="s2").model_copy(
    update={"timestamp": T0 + timedelta(days=50)})
LATER = make_turn(3, "We mirror the exporter to GITHUB now.", session="s3").model_copy(
    update={"timestamp": T0 + timedelta(days=61)})
NODES = "SELECT name FROM graph_nodes WHERE lower(name)='github'"
LABELS = "SELECT DISTINCT e.label FROM graph_edges e JOIN graph_nodes n ON n.node_id=e.dst_id " \
         "WHERE e.edge_type='MENTIONS' AND lower(n.name)='github' ORDER BY e.label"


def _retention(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                       "data_dir": settings.data_dir.parent / name})


async def test_a_rolled_back_forget_keeps_the_later_least_spelling(settings: Settings) -> None:
    s = _retention(settings, "rolled-back")
    async with store_with(s, [FORGOTTEN, KEPT]) as (rt, app):
        assert rows(s.data_dir, NODES) == [{"name": "GitHub"}]
        assert await app.admin.retention(T0 + timedelta(days=60)) > 0
        await rt.run_until_idle()
        assert rows(s.data_dir, NODES) == [{"name": "Github"}]  # respelled by the forget
        await rt.publish([LATER])
        await rt.run_until_idle()
        assert rows(s.data_dir, NODES) == [{"name": "GITHUB"}]
        (decision,) = {e["decision_id"] for e in app.governance_events(SCOPE) if e["decision"] == "forget"}
        await app.rollback(SCOPE, decision)
        await rt.run_until_idle()
        kept = {r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")}
        after, labels = rows(s.data_dir, NODES), rows(s.data_dir, LABELS)
    assert {FORGOTTEN.content, KEPT.content, LATER.content} <= kept  # the rollback gave the message back
    assert {"label": "GITHUB"} in labels, labels
    async with store_with(_retention(settings, "never"), [FORGOTTEN, KEPT, LATER]):
        never = rows(settings.data_dir.parent / "never", NODES)
    assert never == [{"name": "GITHUB"}]
    assert after == never  # actual: [{'name': 'GitHub'}], the respell's old row written over 'GITHUB'
