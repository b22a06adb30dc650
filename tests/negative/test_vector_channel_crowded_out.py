"""Merged duplicates crowd the user's other memories out of recall's vector channel.

Finding: the vector channel asks the index for the ``config.candidates`` (50) nearest points that match the
scope payload filter (``Retriever._nearest``, altm/recall/retrieval/_engine.py:192-198, filters from
``vector_filters``, altm/recall/retrieval/_policy.py:11-22: tenant, workspace, user, agent, session, layer),
and only then drops what the SQL policy refuses (``_vector``, _engine.py:200-205: merged, superseded,
rejected, expired). A memory governance merged into an earlier duplicate keeps its point (merges remove no
point: altm/pipeline/processors/embed.py:108-134 deletes only ``removed_ids``) with the same vector as the
canonical one. So a statement said again in many sessions — a daily stand-up line, a tool that restates a
setting, or a hostile input that repeats one sentence on purpose — leaves as many merged atoms, all with the
best score for any query near them; they fill the 50 candidates, are all dropped afterwards, and the user's
other memories never reach the vector channel at all: recall silently loses its semantic matches (a query
that shares no word with the memory it needs finds nothing), however few memories the user really has.

Reproduction: local embedder; one preference said in 60 sessions (59 atoms merged into the first) and two
other preferences about credentials; from a new session, search "when do database secrets get changed"
with the ``vector`` preset, top_k 10. The user has 6 memories recall may show (3 atoms, 3 persona facets);
the vector channel returns 2 (the repeated preference's atom and facet), and neither credentials
preference. With the statement said in 2 sessions instead of 60, the same search returns all 6.

Expected: the vector channel yields up to ``candidates`` memories the policy admits, so with 6 admitted
memories and top_k 10 every one of them is a hit (in particular both credentials preferences); e.g. points
carry what the SQL policy filters on (lifecycle state, superseded) and the payload filter excludes it, or
``_nearest`` searches on past the refused points until it has ``candidates`` admitted ones.
"""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

REPEATED = "I prefer to rotate the staging database password every Monday."
POSTGRES = "I prefer that production Postgres credentials expire at the end of each quarter."
REDIS = "I prefer Vault to refresh our Redis cache secrets every night."
TURNS = [make_turn(i, REPEATED, session=f"standup-{i}") for i in range(1, 61)] + [
    make_turn(100, POSTGRES, session="ops-1"), make_turn(101, REDIS, session="ops-2")]


async def test_merged_duplicates_leave_room_for_the_other_memories(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    async with store_with(s, TURNS) as (_, app):
        merged = rows(s.data_dir, "SELECT memory_id FROM memories WHERE lc_state = 'merged'")
        assert len(merged) >= 50  # the repeated statement's atoms, merged into the first one
        admitted = {r["memory_id"] for r in rows(
            s.data_dir, "SELECT memory_id FROM memories WHERE layer IN ('L2', 'L4') AND lc_state = 'active' "
                        "AND superseded_by IS NULL")}
        assert len(admitted) == 6
        result = app.search(SCOPE, "fresh-session", "when do database secrets get changed", preset_name="vector",
                            top_k=10)
        found = {h.memory_id for h in result.hits}
        shown = [h.content for h in result.hits]
    assert any("Postgres" in c for c in shown) and any("Redis" in c for c in shown), shown
    assert found == admitted, f"the vector channel found {len(found)} of the {len(admitted)} admitted memories"
