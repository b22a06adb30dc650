"""A review decision on another tenant's memory id tells the decider whose memory it is.

What a user expects (README, "API keys"): "A refusal (403) names the key's own prefix, never the scope a foreign
id belongs to; a memory or cycle id outside the key's reach answers 404 like an unknown one." Pin, unpin,
feedback, erase and rollback all check the id against the caller's scope before anything is published
(``recall.memory`` / ``governance_decision`` → 404). A review decision does not: ``POST /v1/review`` (and the
browser's ``POST /ui/review``) publishes whatever ``item_id`` it is given, the writer refuses it, and the
refusal is filed as a *rejection in the decider's own review queue* with the writer's reason:

    reviewed memory mem_… belongs to scope home 'globex/ops/u2', not 'acme/platform/dana'

while an id that exists nowhere reads "… is not in this shard". So a user key of tenant ``acme`` learns that a
memory id exists, and which tenant, workspace and user it belongs to, from its own review queue (API and browser
page alike) — an existence-and-owner oracle across tenants, and the queue fills with items nobody can act on.

Suspected cause: ``altm/interfaces/http/_app.py`` ``review_decide`` and ``altm/interfaces/browser/_actions.py``
``review_decide`` call only ``gate.user`` (no check that the item is in the user's review queue), and
``altm/pipeline/writer/ops/_base.py`` ``target_row`` words its rejection with the foreign home.
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Scope, partition_for
from altm.core.settings import Settings
from altm.store import MemoryQueries
from tests.support.browser import browser_world, login
from tests.support.turns import SCOPE, make_turn

PARTITIONS = 4


def _foreign_scope() -> Scope:
    """Another tenant's user whose memories live in the same shard as dana's (the writer finds the row)."""
    home = next(f"globex/ops/u{i}" for i in range(1000)
                if partition_for(f"globex/ops/u{i}", PARTITIONS) == partition_for(SCOPE.home, PARTITIONS))
    return Scope.parse(home + "/coder")


async def test_a_review_decision_on_a_foreign_id_does_not_reveal_its_owner(settings: Settings, tmp_path: Path
                                                                            ) -> None:
    foreign_scope = _foreign_scope()
    turns = [make_turn(1, "We're migrating the billing service from Flask to FastAPI.", session="s1"),
             make_turn(2, "Globex deploys on Fridays to the Frankfurt cluster.", scope=foreign_scope, session="g1")]
    settings = settings.model_copy(update={"partitions": PARTITIONS})
    async with browser_world(settings, tmp_path, turns) as w:
        c, keys, rt = w.client, w.keys, w.runtime
        foreign = next(r for r in MemoryQueries(rt.shards).listing(None, limit=100)
                       if r["tenant_id"] == "globex" and r["layer"] == "L0")
        dana = {"Authorization": f"Bearer {keys['user']}"}  # a user key of acme/platform/dana

        unknown_id = "mem_" + "0" * 32
        answers = [await c.post("/v1/review", headers=dana, json={
            "scope": SCOPE.path, "item_id": item, "decision": "approve"})
            for item in (foreign["memory_id"], unknown_id)]
        # a foreign id answers like an unknown one (today both 200 "accepted"; 404 for both would do too)
        assert answers[0].status_code == answers[1].status_code
        await rt.run_until_idle()

        queue = await c.get("/v1/review", params={"scope": SCOPE.path}, headers=dana)
        assert queue.status_code == 200
        # expected: nothing in dana's queue says whose the foreign id is; actual: a rejection reading "reviewed
        # memory mem_… belongs to scope home 'globex/ops/u2', not 'acme/platform/dana'" (the unknown id's reads
        # "… is not in this shard": the two differ, so the queue is an oracle for ids of other tenants)
        assert foreign_scope.home not in queue.text, "dana's review queue names another tenant's user"
        await login(c, keys["user"])
        page = await c.get("/ui/review", params={"scope": SCOPE.path})
        assert foreign_scope.home not in page.text, "the browser's review page names another tenant's user"
