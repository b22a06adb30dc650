"""Two control requests with the same payload are two proposals.

Found by the randomized replay check (seed 483): a control proposal was named by its payload alone, and an
erasure's payload does not name the agent (its scope does), so erasing agent coder and then agent reviewer
gave one proposal id. A replay activated the tombstones it carried for both erasures at the first, so it
refused a rollback made between them that the source had applied. A control proposal is now named by the
control event it comes from: the same request sent again is still one proposal."""

from __future__ import annotations

from pathlib import Path

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

CODER, REVIEWER = SCOPE, SCOPE.model_copy(update={"agent_id": "reviewer"})


async def test_a_second_erasure_of_an_agent_erases_what_it_said_since(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, "We decided to deploy the billing service on Tuesdays.")]) as (rt, app):
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE agent_id='coder'") == []
        await rt.publish([make_turn(2, "The staging cluster runs on Kubernetes 1.30 in Dublin.", session="s2")])
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE agent_id='coder'") != []
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        left = rows(s.data_dir, "SELECT layer, content FROM memories WHERE agent_id='coder'")
    assert left == []
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_rollback_between_the_erasures_of_two_agents_replays_as_it_was_applied(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    said = "The staging cluster runs on Kubernetes 1.30 in Dublin."
    turns = [make_turn(1, "The release is on Friday."), make_turn(2, said, scope=REVIEWER, session="s1"),
             make_turn(3, said, scope=REVIEWER, session="s2")]
    async with store_with(s, turns) as (rt, app):
        (merge,) = {e["decision_id"] for e in app.governance_events(REVIEWER) if e["decision"] == "merge"}
        await app.erase(CODER, "agent")
        await rt.run_until_idle()
        await app.rollback(REVIEWER, merge, "not the same")
        await rt.run_until_idle()
        await app.erase(REVIEWER, "agent")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories") == []
    await replayed_equal(s, tmp_path / "replayed")
