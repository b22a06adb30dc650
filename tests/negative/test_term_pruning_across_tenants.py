"""Which of a user's own memories recall finds depends on what other tenants stored in the same shard.

The word channel leaves out "very common" query terms (``TermStatistics.prune``, altm/recall/retrieval/_terms.py:
found in more than ``max_term_df`` = 30% of the memories, as long as ``min_terms`` rarer ones remain). The counts
it prunes by are the whole shard's: ``SearchQueries.document_count`` and ``term_frequency``
(altm/store/_search.py: ``SELECT COUNT(*) FROM memories`` and ``... FROM memories_fts WHERE memories_fts MATCH ?``,
with no scope filter), and a shard holds every user whose scope home hashes to its partition, of every tenant.

So another tenant decides what a user's query matches: a tenant that stores a few memories with a word drops
that word from every query of every user on its shard, and their memories that only that word matches are no
longer recalled (here, with the default preset, neither the word nor the trigram channel finds it). The
partition function is public (murmur2 of ``tenant/workspace/user``), so a tenant can pick user ids that share
a victim's shard, and tell from its own results whether a word is common in the other tenants' memories (it
stores a memory with the word and queries it beside two rare words of its own: the memory comes back exactly
when the others seldom say the word).

Expected: recall of one user's memories does not depend on any other user's data; the term statistics that
prune a query are those of the scope's home (the same ``scope_terms`` filter the word channel matches with).
"""

from __future__ import annotations

from altm.app import MemoryApp
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, colocated_scope, make_turn

MINE = [
    make_turn(1, "The quarterly acquisition memo goes to legal.", session="s1"),
    make_turn(2, "Remember the zanzibar offsite logistics.", session="s1"),
    make_turn(3, "The quokka mascot stickers arrived.", session="s1"),
]
QUESTION = "acquisition zanzibar quokka"


def _found(app: MemoryApp) -> set[str]:
    hits = app.search(SCOPE, "s1", QUESTION, top_k=20).hits
    return {h.content for h in hits if h.layer == "L0"}


async def test_another_tenants_memories_do_not_change_what_a_user_recalls(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, MINE) as (_rt, app):
        alone = _found(app)
    assert MINE[0].content in alone  # "acquisition" matches it

    other = colocated_scope(s.partitions)
    theirs = [make_turn(10 + i, f"Acquisition note {i}: nothing more to say.", scope=other, session="x")
              for i in range(12)]
    s2 = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir.parent / "data2"})
    async with store_with(s2, [*MINE, *theirs]) as (_rt, app):
        beside = _found(app)
    assert beside == alone, f"another tenant's memories took {sorted(alone - beside)} out of this user's recall"
