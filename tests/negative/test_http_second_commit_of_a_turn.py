"""A second cycle of one turn commits with 200 and its reply is silently refused by the writer.

Finding: ``POST /v1/prepare`` of a turn already prepared under another idempotency key, with the same content, is
allowed (``ProtocolService._turn_unused``, ``altm/app/_protocol.py:161``, only refuses *other* content) and opens a
second cycle (the cycle id comes from the key, ``altm/app/_protocol.py:216``). A host's "regenerate the answer"
flow does exactly this. ``POST /v1/commit`` of that second cycle checks only that cycle's own state
(``ProtocolService._commit``, ``altm/app/_protocol.py:283-324``) and answers ``200 {"state": "committed"}``; but the
reply's L0 memory is identified by scope, session, turn id and role (``capture.l0_memory_id``), the same as the
first cycle's reply, so the writer refuses it ("L0 is append-only: ... already stored with different content",
``altm/pipeline/writer/ops/memory.py:67``). The host was told its answer was recorded; it never is, and the cycle is
stored as committed with an answer nobody can read.

Reproduction: over HTTP, prepare turn t1 of session s2 under idempotency key k1 and again under k2 (same content,
both 200, two cycle ids); commit k1's cycle with "Dec 15." and k2's with another answer (both 200); run the
pipeline; read the session's L0 messages and the writer's rejections.

Expected: the second commit is refused before anything is published (409, like a prepare that gives a stored turn
other content), or its answer is stored; never a 200 for a reply the writer will refuse.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from altm.core.settings import Settings
from altm.interfaces.http import KeyStore, create_app
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

REGENERATED = "It is December 15 (regenerated answer)."


async def test_a_second_cycle_of_a_turn_is_not_committed_into_a_refused_reply(settings: Settings,
                                                                               tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "The billing deadline is December 15.", session="s1")]) as (rt, app):
        keys = KeyStore(tmp_path / "keys.json")
        auth = {"Authorization": f"Bearer {keys.create('coder', SCOPE.path)}"}
        transport = httpx.ASGITransport(app=create_app(app, keys))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            body = {"scope": SCOPE.path, "session_id": "s2", "turn_id": "t1", "content": "billing deadline?"}
            first = await c.post("/v1/prepare", json={**body, "idempotency_key": "k1"}, headers=auth)
            second = await c.post("/v1/prepare", json={**body, "idempotency_key": "k2"}, headers=auth)
            assert first.status_code == 200 and second.status_code == 200
            assert first.json()["cycle_id"] != second.json()["cycle_id"]
            done = await c.post("/v1/commit", json={"cycle_id": first.json()["cycle_id"],
                                                    "assistant_content": "Dec 15."}, headers=auth)
            assert done.status_code == 200
            again = await c.post("/v1/commit", json={"cycle_id": second.json()["cycle_id"],
                                                     "assistant_content": REGENERATED}, headers=auth)
            await rt.run_until_idle()
    if again.status_code == 409:
        return  # refused before anything was published: fine
    assert again.status_code == 200 and again.json()["state"] == "committed"
    replies = [str(r["content"]) for r in rows(
        s.data_dir, "SELECT content FROM memories WHERE layer='L0' AND role='assistant' AND session_id='s2'", ())]
    refused = [str(r["reason"]) for r in rows(s.data_dir, "SELECT reason FROM rejections", ())]
    assert REGENERATED in replies, (
        f"commit answered 200 committed, but the reply was not stored (stored: {replies}; refused: {refused})")
