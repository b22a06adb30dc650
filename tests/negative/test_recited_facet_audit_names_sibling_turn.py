"""A persona facet re-cited to the inspecting agent's own atom shows a sibling agent's turn in its audit history.

The memory inspector hides, on another agent's row (an L4 facet seen from a sibling agent), the fields that name
that agent's turns and the evidence it cannot see (altm/app/_inspection.py:19 ``OTHER_AGENTS_IDS``, and
``MemoryInspector._shown``). Whether a row is "another agent's" is decided once, from the inspected row as it is
now (altm/app/_inspection.py:123, ``foreign = row["agent_id"] != scope.agent_id``), and then applies to every audit
row of its history. A facet's agent changes over time: when the atom it cites goes (a reviewer rejected it, an
erasure took it) while another agent of the user said the same, the writer re-cites it to that agent's atom
(``facet_recited``), and the facet becomes that agent's row. Its audit history still holds the versions that were
the first agent's, and the inspector shows them whole to the new agent.

Here the ``writer`` agent said "I prefer tabs..." first (its turn's event id, chosen by the host, names the
conversation: "evt-divorce-lawyer-call"), and the ``coder`` agent said the same later. The facet cites the
writer's atom; a reviewer rejects that atom and the facet is re-cited to the coder's. The coder's inspection of
the facet then lists, in the audit history, ``source_event_id: evt-divorce-lawyer-call → turn_…`` and the
writer's atom id in ``evidence``: exactly what the same page hid from the coder before the re-citation.

Expected: each audit image is shown as the inspecting scope may see the agent it belonged to (the fields of
``OTHER_AGENTS_IDS`` and invisible evidence ids left out of a version that was another agent's).
"""

from __future__ import annotations

from altm.core import Scope
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

WRITER = Scope.parse("acme/platform/dana/writer")
SAID = "I prefer tabs over spaces in Python files."
SECRET = "evt-divorce-lawyer-call"


async def test_a_recited_facets_history_hides_the_sibling_agents_turns(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    writer_turn = make_turn(1, SAID, scope=WRITER, session="w1").model_copy(update={"event_id": SECRET})
    async with store_with(s, [writer_turn, make_turn(2, SAID, session="s1")]) as (rt, app):
        (facet,) = app.list_memories(SCOPE, layer="L4")
        assert facet["agent_id"] == "writer"
        before = app.recall.inspect(SCOPE, facet["memory_id"])
        assert SECRET not in repr(before.audit), "hidden while the facet is the writer's row"
        (writer_atom,) = app.list_memories(WRITER, layer="L2")
        await app.review_decide(SCOPE, writer_atom["memory_id"], "reject", "not what the user meant")
        await rt.run_until_idle()
        (recited,) = app.list_memories(SCOPE, layer="L4")
        assert recited["agent_id"] == "coder", "re-cited to the coder's own atom"
        after = app.recall.inspect(SCOPE, recited["memory_id"])
    shown = repr([a.changed for a in after.audit])
    assert SECRET not in shown, "the coder's inspection shows the writer agent's turn event id"
    assert writer_atom["memory_id"] not in shown, "the coder's inspection names the writer agent's atom"
