"""An erased memory's relation label stays readable in the audit log (red-team review of "an erasure redacts
the earlier audit rows of the graph edges it removes").

What a user expects (README: an erasure removes the erased content, and the audit keeps hashes of what it
removed, not the text): session s1's atom "Alice manages Bob" gave the RELATED edge "Alice -manages-> Bob"
(its own edge now: ``edge_id(..., label)``), session s2's the edge "Alice -mentors-> Bob". After s1 is erased
the "manages" edge is gone, and its label, a word of the erased content, should be in no audit value. The
change redacts the earlier audit rows only of the edges the scrub deletes because they start or end at an
erased memory (the MENTIONS edges, ``gone_edges`` in ``ShardTx.scrub``); an edge between two nodes that only
erased memories evidenced goes in ``_prune_edges`` (its delete row redacted), but the insert row the link wrote
earlier keeps ``"label": "manages"`` in clear.
Suspected cause: altm/store/_shard_tx.py ``scrub`` (``self.redact_audit("graph_edges", gone_edges)``: only the
edges of the first loop) with ``_prune_edges`` not returning / redacting the audit rows of the edges it deletes.
Fix direction: collect the edge ids ``_prune_edges`` deletes under ``redact=True`` and redact their audit rows
as well (and those of the nodes ``_drop_orphan_nodes`` drops)."""

from __future__ import annotations

import json
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = make_turn(1, "I decided that Alice manages Bob on the payments team.", session="s1")
KEPT = make_turn(2, "I decided that Alice mentors Bob on the payments team.", session="s2")
LEAK = ("SELECT action, target_id FROM audit_log WHERE target_table='graph_edges' "
        "AND (old_value LIKE '%manages%' OR new_value LIKE '%manages%')")


def _graph(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "GraphExtraction":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    label = "manages" if "manages" in text else "mentors"
    return json.dumps({"entities": [{"name": "Alice"}, {"name": "Bob"}],
                       "relations": [{"src": "Alice", "dst": "Bob", "label": label}]})


async def test_the_erased_relation_leaves_the_audit(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    with openai_double(_graph) as api:
        llm = {ModelTask.GRAPH: LLMSettings(base_url=api.base_url, model="grapher", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish([ERASED, KEPT])
            await rt.run_until_idle()
            assert rows(s.data_dir, "SELECT label FROM graph_edges WHERE label='manages'")
            assert rows(s.data_dir, LEAK)  # the link's insert row, before the erasure
            await app.erase(SCOPE, "session", session_id="s1")
            await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT label FROM graph_edges WHERE label='manages'")  # holds: the edge went
    assert rows(s.data_dir, LEAK) == []  # actual: the insert row of the 'manages' edge, its label in clear
