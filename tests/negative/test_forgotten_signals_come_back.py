"""A memory retention forgot keeps its use signals, and they come back on the memory made again with its id.

Forgetting deletes the memory's row (``ShardTx.delete_memory``) but not its rows in ``lifecycle_signals`` (an
erasure takes them: ``ShardTx.erase_records``). Memory ids are derived from scope and content, so a persona
facet (``[home, "L4", facet_key, content]``), a scene (``[scope, "L3", anchor]``) or a session capsule
(``[scope, session, "L1", "capsule"]``) forgotten by retention is stored again under the same id when what makes
it is said again. The writer inserts it fresh (weight 1.0, active, no harm, C0), yet the forgotten memory's
signals still sit under that id: the next signal of any kind (one injection into another agent's bundle) tallies
them all (``ops/lifecycle.tallied``) and the new facet turns demoted, twice harmful and compressed to C4 (a
marker only in bundles) by feedback and a compaction pass that were about the memory retention forgot.

Here agent ``coder`` hears "I prefer dark mode in every editor." (facet F); F is marked harmful twice and
compacted to C4, then forgotten by L4 retention. 100 days later agent ``reviewer`` hears the same statement:
F is stored again, active, C0. One ``prepare_turn`` of ``reviewer`` injects it, and F is demoted, harmful 2,
C4.

Expected: a forgotten memory's signals go with it (kept in the audit, as its row is, for a rollback of the
forget), so the memory stored again under its id starts from its own signals: the injection counts one
injection and nothing else.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

DARK = "I prefer dark mode in every editor."
REVIEWER = SCOPE.model_copy(update={"agent_id": "reviewer"})
_LC = ("SELECT lc_state, lc_harmful, lc_injected, lc_compression FROM memories WHERE memory_id=?")


async def test_a_facet_made_again_after_retention_starts_without_the_forgotten_ones_signals(
        settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l4": 30.0})
    async with store_with(s, [make_turn(1, DARK, session="a")]) as (rt, app):
        (facet,) = app.list_memories(SCOPE, layer="L4")
        mid = str(facet["memory_id"])
        for _ in range(2):
            await app.feedback(SCOPE, [mid], "harmful")
            await rt.run_until_idle()
        await app.admin.compaction(T0 + timedelta(days=400))
        await rt.run_until_idle()
        (old,) = rows(s.data_dir, _LC, (mid,))
        assert old == {"lc_state": "demoted", "lc_harmful": 2, "lc_injected": 0, "lc_compression": 4}, old
        await app.admin.retention(T0 + timedelta(days=90))
        await rt.run_until_idle()
        assert rows(s.data_dir, _LC, (mid,)) == []  # forgotten
        again = make_turn(2, DARK, session="b", scope=REVIEWER)
        await rt.publish([again.model_copy(update={"timestamp": T0 + timedelta(days=100)})])
        await rt.run_until_idle()
        (made_again,) = rows(s.data_dir, _LC, (mid,))
        assert made_again == {"lc_state": "active", "lc_harmful": 0, "lc_injected": 0, "lc_compression": 0}
        prepared = await app.prepare_turn(REVIEWER, "b", "b-t3", "Which editor mode do I prefer, dark?", 800)
        assert mid in [item.memory_id for item in prepared.bundle.items]
        await rt.run_until_idle()
        (injected,) = rows(s.data_dir, _LC, (mid,))
    expected: dict[str, Any] = {**made_again, "lc_injected": 1}
    assert injected == expected, ("one injection of the facet made again tallied the forgotten one's signals",
                                  injected)
