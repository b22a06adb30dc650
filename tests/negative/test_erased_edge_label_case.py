"""An erased memory's spelling of a relation label stays on the edge another memory still holds (red-team
review of ``edge_id(..., label)``).

What a user expects: the fix for test_erased_edge_label.py made each labelled relation an edge of its own, so an
erased memory's relation leaves with it. But the id takes ``norm(label)`` while the row keeps the label as the
model spelled it, and ``_put_edge`` keeps the least label seen: session s1's atom gives "Alice -Manages-> Bob",
s2's "Alice -manages-> Bob", one edge labelled "Manages" (the least). After s1 is erased the edge stands on s2
alone, yet it keeps s1's spelling "Manages": nothing recomputes a kept edge's label from the evidence left (the
respell fix did this for nodes only). A store that never heard s1 labels it "manages"; so does a replay of this
one (the label is not in the state hash, so ``replayed_equal`` cannot see it: the rows are compared here).
Suspected cause: altm/pipeline/processors/link.py ``edge_id`` (``norm(label)`` in the id, ``rel.label`` in the
row) with altm/pipeline/writer/ops/graph.py ``_put_edge`` (``label = min``) and ``ShardTx._prune_edges``
(altm/store/_shard_tx.py) only lowering evidence count and weight.
Fix direction: store the label as normalised (what the id holds), or keep the label per evidence and respell
the edge from what is left in ``_prune_edges`` as ``_respell_nodes`` does for nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from tests.support.memories import embedded, runtime_of
from tests.support.openai_double import openai_double
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

ERASED = make_turn(1, "I decided that Alice manages Bob on the payments team.", session="s1")
KEPT = make_turn(2, "I decided that Alice manages Bob on the billing team.", session="s2")
RELATED = "SELECT label, evidence_count FROM graph_edges WHERE edge_type='RELATED' ORDER BY edge_id"


def _graph(body: dict[str, Any]) -> str | int:
    if body["response_format"]["json_schema"]["name"] != "GraphExtraction":
        return 400
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    label = "Manages" if "payments" in text else "manages"
    return json.dumps({"entities": [{"name": "Alice"}, {"name": "Bob"}],
                       "relations": [{"src": "Alice", "dst": "Bob", "label": label}]})


async def _stored(s: Settings, turns: list[Any], *, erase: bool) -> list[dict[str, Any]]:
    with openai_double(_graph) as api:
        llm = {ModelTask.GRAPH: LLMSettings(base_url=api.base_url, model="grapher", max_retries=0)}
        async with embedded(s, llm_settings=llm) as deployment:
            rt, app = runtime_of(deployment), deployment.app
            await rt.publish(turns)
            await rt.run_until_idle()
            if erase:
                # one spelling: the normalised one
                assert rows(s.data_dir, RELATED) == [{"label": "manages", "evidence_count": 2}]
                await app.erase(SCOPE, "session", session_id="s1")
                await rt.run_until_idle()
    return rows(s.data_dir, RELATED)


async def test_the_erased_spelling_of_a_relation_leaves_the_edge(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "defer_backoff_s": 0.0})
    after = await _stored(s, [ERASED, KEPT], erase=True)
    never_heard = await _stored(s.model_copy(update={"data_dir": tmp_path / "never-heard"}), [KEPT], erase=False)
    assert never_heard == [{"label": "manages", "evidence_count": 1}]
    assert after == never_heard  # actual: [{'label': 'Manages', 'evidence_count': 1}], the erased spelling
