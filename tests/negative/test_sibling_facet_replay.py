"""A persona facet two agents of the user heard keeps standing on the one left, and a replay agrees: after the
first agent's erasure (the replay never opens its records) and after a reviewer rejects its atom."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
SAID = "I prefer tabs over spaces in Python."


async def test_after_the_first_agents_erasure(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, SAID, session="a1"), make_turn(2, SAID, scope=WRITER, session="b1")):
            await rt.publish([turn])
            await rt.run_until_idle()
        await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, "SELECT agent_id, evidence FROM memories WHERE layer='L4'")
        (writers,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND agent_id='writer'")
    assert facet["agent_id"] == "writer" and writers["memory_id"] in facet["evidence"], facet
    await replayed_equal(s, tmp_path / "replayed")


async def test_after_a_rejection_of_the_first_agents_atom(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for turn in (make_turn(1, SAID, session="a1"), make_turn(2, SAID, scope=WRITER, session="b1")):
            await rt.publish([turn])
            await rt.run_until_idle()
        (coders,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2' AND agent_id='coder'")
        await app.review_decide(SCOPE, coders["memory_id"], "reject")
        await rt.run_until_idle()
        (facet,) = rows(s.data_dir, "SELECT agent_id, lc_state FROM memories WHERE layer='L4'")
    assert (facet["agent_id"], facet["lc_state"]) == ("writer", "active"), facet
    await replayed_equal(s, tmp_path / "replayed")
