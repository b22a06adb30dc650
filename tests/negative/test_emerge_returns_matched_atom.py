"""``emerge`` offers, as related through the graph, the very atom the query matched (red-team review of the graph).

README: ``altm emerge QUERY`` gives "related memories the query does not match"; ``Retriever.emerge``: "Memories
related to the query through the graph that the query itself does not match". The user said "I decided to call
Marco every Sunday evening." (s1) and "I decided to go hiking with Marco near the lake." (s2); extract made an
atom of each sentence. ``emerge("Sunday evening call")`` should offer the hiking plan (linked through Marco) and
never the Sunday decision, which is what the query matches word for word.
Actual: the first emergent is the L2 atom "I decided to call Marco every Sunday evening.", with the path
message → Marco → atom. Recall shows a derived memory citing exactly one message and that message as one hit
(the message shown), so the atom's id is not among ``matched.hits``, and ``emerge`` takes "not matched" to be
"not a shown hit".
Suspected cause: ``altm/recall/retrieval/_engine.py`` ``Retriever.emerge`` (``direct = {h.memory_id for h in
matched.hits}``): the members a hit absorbed (``_assembly.grouped``) are left out of ``direct``. Fix direction:
count every candidate the word/vector channels found (or every group member) as matched."""

from __future__ import annotations

from altm.core import Settings
from tests.support.memories import embedded, runtime_of, say
from tests.support.turns import SCOPE

SAID = [("s1", "I decided to call Marco every Sunday evening."),
        ("s2", "I decided to go hiking with Marco near the lake.")]


async def test_emerge_leaves_out_what_the_query_matches(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        for i, (session, text) in enumerate(SAID, 1):
            await say(rt, i, text, session)
        emerged = app.emerge(SCOPE, "Sunday evening call")
    contents = [(e.layer, e.content) for e in emerged]
    assert ("L2", "I decided to go hiking with Marco near the lake.") in contents  # related through Marco
    # actual: ('L2', 'I decided to call Marco every Sunday evening.') comes first
    assert not [c for c in contents if "Sunday evening" in c[1]], contents
