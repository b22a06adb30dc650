"""A sibling agent's private memories decide which of an agent's own memories recall finds.

Finding: the word channel leaves out "very common" query terms (``TermStatistics.prune``,
altm/recall/retrieval/_terms.py:67: in more than ``max_term_df`` = 30% of the memories, while ``min_terms``
rarer ones remain). Since ``test_term_pruning_across_tenants.py`` the counts are the *home's*
(``SearchQueries.document_count`` / ``term_frequency``, altm/store/_search.py:233-242: ``tenant/workspace/user``
and the ``h…`` home token), i.e. every agent's memories of the user, of every layer and session — not what the
scope policy lets the asking agent see (its own L0-L3 and the user's L4, ``ScopePolicy.groups``). An agent key
(``TENANT/WORKSPACE/USER/AGENT``) may not read a sibling agent's L0-L3 (README, "API keys"), yet the sibling's
messages prune the agent's query: twelve messages of agent ``writer`` that say "acquisition" take the word out
of every query of agent ``coder``, and coder's own memory that only that word matches is no longer recalled.

It is also an oracle across the agent boundary: coder stores a memory with a word and queries it beside two
rare words of its own; the memory comes back exactly when its sibling seldom says the word. (The cache in
``TermStatistics`` is keyed by home too, so the agents share one another's counts.)

Reproduction: coder's three messages ("... acquisition memo ...", "... zanzibar ...", "... quokka ...") alone,
then beside twelve "Acquisition note N" messages of ``acme/platform/dana/writer``; the query "acquisition
zanzibar quokka" (agent coder, session s1) finds the acquisition memo alone, not beside them.

Expected: what an agent recalls does not depend on memories its scope may not see; the term statistics that
prune its query are counted over what the scope policy admits (the same groups ``fts_filter`` matches with:
the agent's L0-L3, the user's L4), and cached per agent.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

MINE = [
    make_turn(1, "The quarterly acquisition memo goes to legal.", session="s1"),
    make_turn(2, "Remember the zanzibar offsite logistics.", session="s1"),
    make_turn(3, "The quokka mascot stickers arrived.", session="s1"),
]
QUESTION = "acquisition zanzibar quokka"
SIBLING = SCOPE.model_copy(update={"agent_id": "writer"})


async def _found(settings: Settings, data_dir: Path, siblings: int) -> set[str]:
    theirs = [make_turn(10 + i, f"Acquisition note {i}: nothing more to say.", scope=SIBLING, session="w1")
              for i in range(siblings)]
    s = settings.model_copy(update={"embedder": "none", "data_dir": data_dir})
    async with store_with(s, [*MINE, *theirs]) as (_rt, app):
        hits = app.search(SCOPE, "s1", QUESTION, top_k=20).hits
    assert all(h.scope == SCOPE.path for h in hits if h.layer != "L4")  # the sibling's messages stay unseen
    return {h.content for h in hits if h.layer == "L0"}


async def test_a_sibling_agents_memories_do_not_change_what_an_agent_recalls(settings: Settings,
                                                                            tmp_path: Path) -> None:
    alone = await _found(settings, tmp_path / "alone", 0)
    assert MINE[0].content in alone  # "acquisition" matches it
    beside = await _found(settings, tmp_path / "beside", 12)
    assert beside == alone, (
        f"agent writer's messages (which agent coder may not see) took {sorted(alone - beside)} out of coder's recall")
