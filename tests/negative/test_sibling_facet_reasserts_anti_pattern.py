"""A persona facet formed from a sibling agent's atom re-asserts an agent's anti-pattern, and recall serves it.

The user tells the ``coder`` agent "Never use pickle for the session cache because unpickling untrusted data runs
code." (an anti-pattern atom). Later the user tells the ``writer`` agent "I prefer pickle for the session
cache.". The writer's atom and the user's persona facet (L4) "Preference (session cache): I prefer pickle for
the session cache." are stored: the guard judges a memory against the anti-patterns of the memory's own agent
only (``ShardTx.anti_patterns``, altm/store/_shard_tx.py:534-541, ``agent_id=?``), and the facet row carries the
writer's scope. But a facet is not the writer's: it is the user's persona, recalled by every agent of the user.
The coder's ``prepare_turn``/``search`` ranks it first, the very statement its own guard refuses: when the same
preference is told to the coder, its atom is refused ("re-asserts anti-pattern ... unpickling untrusted data
runs code"), and so would be a facet formed from it.

What a user expects (README, Trust and erasure, "One guarded door"): "A derived memory that re-asserts a stored
anti-pattern is refused, naming the anti-pattern and its why-bad". The facet is a derived memory of the user, in
the user's store, that every agent of the user recalls: what the coder learnt to be an anti-pattern must not come
back to the coder through the user's persona because another agent heard it. (Per-agent L0-L3 may keep per-agent
guards; an L4 facet is judged at least against the anti-patterns of the agents that recall it.)
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

WRITER = SCOPE.model_copy(update={"agent_id": "writer"})
ANTI = "Never use pickle for the session cache because unpickling untrusted data runs code."
PREF = "I prefer pickle for the session cache."


@pytest.mark.xfail(strict=True, reason="known limit (issue 15): anti-patterns are an agent's (L2), a facet is the "
                   "user's (L4); the guard judges a facet against its own agent's anti-patterns only. Judging it "
                   "against every agent's, or holding it for review, is a design decision left open")
async def test_the_users_facet_does_not_reassert_an_anti_pattern_the_recalling_agent_holds(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, ANTI, session="a1")])
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE kind='anti_pattern' AND agent_id='coder'")
        await rt.publish([make_turn(2, PREF, scope=WRITER, session="b1")])
        await rt.run_until_idle()
        await rt.publish([make_turn(3, PREF, session="a2")])  # the same told to the coder: its guard refuses it
        await rt.run_until_idle()
        refused = [r["reason"] for r in rows(s.data_dir, "SELECT reason FROM rejections")]
        coder_l4 = [r["content"] for r in app.list_memories(SCOPE, layer="L4")]
        recalled = [(h.layer, h.content) for h in app.search(SCOPE, "a3", "pickle for the session cache").hits
                    if h.layer == "L4"]
    assert any("re-asserts anti-pattern" in r for r in refused), refused  # the coder's own atom is refused
    assert not [c for c in coder_l4 if "pickle" in c], f"the coder sees a facet re-asserting it: {coder_l4}"
    assert not recalled, f"the coder's recall serves it: {recalled}"
