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

Decided (2026-12-07): a persona facet is judged against the anti-patterns of every agent of the user, and one
that re-asserts one is held for review, not refused, as a capsule or a scene is: it restates an atom that stays
stored (the writer's), and a refusal could not be made whichever of the facet and the anti-pattern came first
(``summaries_judged_again`` judges the user's facets again when an anti-pattern is stored). Recall serves it
labelled ``uncertain``, with the anti-pattern it may re-assert as the reason, never as a trusted persona fact;
when the anti-pattern goes (erased, forgotten, rejected) the hold is lifted.
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


async def _facet_after_anti_pattern(s: Settings, *, reverse: bool = False) -> None:
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        order = [make_turn(2, PREF, scope=WRITER, session="b1"), make_turn(1, ANTI, session="a1")]
        for turn in order if reverse else order[::-1]:
            await rt.publish([turn])
            await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE kind='anti_pattern' AND agent_id='coder'")
        (facet,) = rows(s.data_dir, "SELECT memory_id, trust_status, trust_reason, trust_contradicting_id "
                                    "FROM memories WHERE layer='L4' AND content LIKE '%pickle%'")
        anti = rows(s.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")[0]["memory_id"]
        assert facet["trust_status"] == "uncertain" and facet["trust_contradicting_id"] == anti, facet
        assert "anti-pattern" in str(facet["trust_reason"]), facet
        recalled = [(h.trust_status, h.content) for h in app.search(SCOPE, "a3", "pickle for the session cache").hits
                    if h.layer == "L4"]
        assert recalled and all(status == "uncertain" for status, _ in recalled), recalled
        held = [m["memory_id"] for m in app.review_queue(SCOPE)["memories"]]
        assert facet["memory_id"] in held, held
        await app.erase(SCOPE, "memory", memory_id=str(anti))  # the anti-pattern goes: the hold is lifted
        await rt.run_until_idle()
        (after,) = rows(s.data_dir, "SELECT trust_status FROM memories WHERE layer='L4' AND content LIKE '%pickle%'")
        assert after["trust_status"] != "uncertain", after


@pytest.mark.parametrize("reverse", [False, True], ids=["anti-pattern-first", "facet-first"])
async def test_the_users_facet_that_reasserts_another_agents_anti_pattern_is_held_for_review(
        settings: Settings, reverse: bool) -> None:
    await _facet_after_anti_pattern(settings.model_copy(update={"embedder": "none"}), reverse=reverse)
