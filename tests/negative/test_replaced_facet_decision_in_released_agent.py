"""A persona version an erasure released is placed again in the scope of the *released* version's agent: the
supersede of it by the version after it is recorded under that agent (and its SUPERSEDES edge is put in that
agent's graph), where time order and the replay of the log record it under the agent that heard the later
version. The replay of an ordinary session erasure then differs from its source whenever two agents of the user
heard the versions.

Finding: tea (day 0, said to agent reviewer), "coffee … now, actually" (day 1, coder, session s1) and "water …
instead, actually" (day 2, coder) chain tea → coffee → water. Erasing s1 releases tea, and govern places it again
(``_moved_facet`` → ``_replace``, altm/pipeline/processors/govern.py:91-98, 218-238): ``_replace`` calls
``_place(event, reader, first, first, stored, atoms)`` with tea's own first atom as the governed memory, so
``_step_forward`` (govern.py:314-337) has ``_version_step`` (govern.py:359-376) propose "water supersedes tea"
with ``scope=mem.scope``: agent reviewer. The writer records the decision in that scope (``supersede``,
altm/pipeline/writer/ops/governance.py:50-74: ``record_decision(p.event_id, p.scope, ...)``) and derives the
SUPERSEDES edge's id from it (``_evidence_edge``, governance.py:412-424). A store that never had s1 (the
replay, which cannot open it) governs water after tea and makes the same supersede from water's atom: agent
coder. Same current facets, but
``governance_events`` (``agent_id``) and ``graph_edges`` (the edge's id, the graph it belongs to: graphs are
private to an agent) differ, so ``altm replay`` / the restore check fails and the state hash differs. The fix of
e06777f was checked with one agent only (``test_removed_middle_version_revives_earlier.py``).

Reproduction: embedded runtime, no embedder, ``retired_key_grace_s=0``; ``said_on(0, TEA, REVIEWER)``,
``said_on(1, COFFEE)``, ``said_on(2, WATER)``, each derived before the next; ``erase(SCOPE, "session",
session_id="s1")``; read the agents of the decision rows that supersede tea by water, then ``replayed_equal``.

Expected: water alone current (it is), the supersede of tea by water recorded under agent coder, the agent
whose statement is the newer version (e.g. the re-placement proposes each step in the scope of the newer
version's saying, as govern does when that saying is governed), and the replay equal to the source.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from altm.core import Settings
from tests.support.facets import current_statements, memory_id_of, said_on
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE

REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
TEA = "I prefer tea in the morning."
COFFEE = "I prefer coffee in the morning now, actually."
WATER = "I prefer water in the morning instead, actually."


def _agents_of_supersede(data_dir: Path, old_id: str, new_id: str) -> list[str]:
    """The agents the steps of the decisions that superseded ``old_id`` by ``new_id`` are recorded under."""
    return sorted({str(r["agent_id"]) for r in rows(
        data_dir, "SELECT agent_id, inputs FROM governance_events WHERE decision = 'supersede'")
        if orjson.loads(str(r["inputs"]) or "{}") == {"old_id": old_id, "new_id": new_id}})


async def test_the_supersede_placed_after_an_erasure_is_the_newer_agents_as_in_the_replay(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, []) as (rt, app):
        for turn in (said_on(0, TEA, REVIEWER), said_on(1, COFFEE), said_on(2, WATER)):
            await rt.publish([turn])
            await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
    assert current_statements(s.data_dir) == [WATER]
    agents = _agents_of_supersede(s.data_dir, memory_id_of(s.data_dir, "L4", TEA),
                                  memory_id_of(s.data_dir, "L4", WATER))
    # actual: ['reviewer'] — proposed from tea's atom (the released version), not from water's
    assert agents == ["coder"], agents
    # actual: governance_events (agent_id) and graph_edges (the SUPERSEDES edge's id) differ
    await replayed_equal(s, tmp_path / "replayed")
