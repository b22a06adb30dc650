"""Recall hands an agent key the turn ids of a sibling agent's conversation (red team, recall surface).

An L4 facet is shared read-only by every agent of the user (README, access table: an agent key may recall
"that agent's L0-L3 and, read-only, its user's L4 persona"). When a sibling agent's statement formed the
facet, its evidence chain runs through that sibling's L2 atom down to the sibling's L0 message. The memory
inspector deliberately hides what names the sibling's turns (altm/app/_inspection.py:19,
``OTHER_AGENTS_IDS = {"source_event_id", "source_id", "session_id", "context", "prompt_hash"}``: "Fields of
another agent's row (an L4 facet seen from a sibling agent) that name that agent's turns"), and the README
promises that "a memory or cycle id outside the key's reach answers 404 like an unknown one".

Recall does not: ``SearchQueries.source_ids`` (altm/store/_search.py:177-199) walks the facet's evidence down
to L0 with no scope check, and the hit's ``source_ids`` go out unfiltered in ``POST /v1/query`` results and
in every ``prepare_turn`` bundle item (altm/recall/context/_bundle.py, ``source_ids=hit.source_ids``). An agent
key for ``coder`` reads the host's turn id of the ``writer`` agent's conversation (here it names the writer's
session, as host turn ids often do).

A user expects evidence links in recall to stop at what the caller may see, as the inspector's do.
"""

from __future__ import annotations

import httpx

from altm.core import Scope
from altm.core.settings import Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

WRITER = Scope.parse("acme/platform/dana/writer")
SECRET_SESSION = "w-divorce-lawyer"
HISTORY = [
    make_turn(1, "I prefer tabs over spaces in Python files.", scope=WRITER, session=SECRET_SESSION),
    make_turn(2, "hello there", session="s1"),
]
QUESTION = "tabs or spaces in Python?"


async def test_an_agent_key_never_reads_a_sibling_agents_turn_ids(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        keys = KeyStore(s.data_dir / "keys.json")
        coder = {"X-API-Key": keys.create("coder", SCOPE.path)}
        transport = httpx.ASGITransport(app=create_app(app, keys))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            query = await client.post("/v1/query", headers=coder, json={
                "scope": SCOPE.path, "session_id": "s1", "query": QUESTION})
            prepared = await client.post("/v1/prepare", headers=coder, json={
                "scope": SCOPE.path, "session_id": "s1", "turn_id": "s1-t3", "content": QUESTION})
    assert query.status_code == prepared.status_code == 200
    facets = [h for h in query.json()["results"] if h["layer"] == "L4"]
    assert facets, "the writer's preference is the user's L4 facet, visible to the coder agent"
    items = [i for i in prepared.json()["bundle"]["items"] if i["layer"] == "L4"]
    assert items
    leaked = [sid for h in [*facets, *items] for sid in h["source_ids"] if SECRET_SESSION in sid]
    assert not leaked, f"the coder agent's key read the writer agent's turn ids {leaked}"
