"""Erasing one agent takes the user's persona facet that a sibling agent heard too, and keeps it out for good.

The user tells the ``coder`` agent "I prefer tabs over spaces in Python." (session a1) and later tells the
``writer`` agent the very same thing (session b1). Each agent has its own L2 atom (atoms are per agent); the
persona facet (L4, the user's, seen by every agent) is one row whose id is the statement's, and govern cites
only the earliest atom of the statement: the coder's (``GovernProcessor._facet``, altm/pipeline/processors/
govern.py:200-206; the facet row also carries the coder's ``agent_id``).

The coder agent is erased. The writer's atom stays, but the facet goes with the coder's content
(``erasure_seeds`` picks every row with the coder's ``agent_id``, L4 included, and ``_with_derivatives`` every
row citing the coder's atom: altm/pipeline/writer/ops/erasure.py:41,222), and nothing proposes it again from the
writer's atom. Worse, when the user says it to the writer again, govern proposes the facet (citing the writer's
atom) and the guard refuses it as "matches erased content (... agent erased ...)": the facet tombstone now keeps
the user's own preference, heard by the agent that stays, out of the persona for good.

What a user expects: erasing an agent removes that agent's content and what was derived from it, and keeps the
other agents' memory intact. The README's access table gives every agent "read-only, its user's L4 persona";
a store that never heard the coder has this facet from the writer's atom. The README says so for the lower
layers: "a derived memory is not refused for an erased message whose very text a live message of the same user
that it cites repeats (said before the erasure, in another session ...)", and for scenes "govern computes the
scene again at once from the atoms left, as a store that never heard the erased session has it"
(Trust and erasure, ``test_erasure_scene_rebuilt.py``). The facet here stands on the writer's live message,
said before the erasure.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
SAID = "I prefer tabs over spaces in Python."
FACET = "Preference (tabs): I prefer tabs over spaces in Python."


def _settings(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0,
                                       "data_dir": settings.data_dir.parent / name})


async def test_erasing_one_agent_keeps_the_facet_a_sibling_agent_heard_too(settings: Settings) -> None:
    control = _settings(settings, "writer-only")  # a store that never heard the coder
    async with store_with(control, [make_turn(2, SAID, scope=WRITER, session="b1")]) as (_rt, app):
        expected = sorted(r["content"] for r in app.list_memories(WRITER, layer="L4"))
    assert expected == [FACET]

    s = _settings(settings, "both")
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, SAID, session="a1")])
        await rt.run_until_idle()
        await rt.publish([make_turn(2, SAID, scope=WRITER, session="b1")])
        await rt.run_until_idle()
        assert sorted(r["content"] for r in app.list_memories(WRITER, layer="L4")) == [FACET]
        await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
        writer_atoms = rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L2' AND agent_id='writer' AND content=?",
                            (SAID,))
        after_erasure = sorted(r["content"] for r in app.list_memories(WRITER, layer="L4"))
        await rt.publish([make_turn(3, SAID, scope=WRITER, session="b2")])  # said to the writer once more
        await rt.run_until_idle()
        after_restated = sorted(r["content"] for r in app.list_memories(WRITER, layer="L4"))
        refusals = [r["reason"] for r in rows(s.data_dir, "SELECT reason FROM rejections")]
    assert writer_atoms, "the writer's own atom stays"
    assert after_erasure == expected, f"the writer lost the user's facet with the coder's erasure: {after_erasure}"
    assert after_restated == expected, f"said to the writer again, the facet is refused: {refusals}"
