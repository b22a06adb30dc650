"""A prepare of an aborted turn answers 200 with the aborted cycle, which no commit can close.

Finding: ``ProtocolService._prepare`` (``altm/app/_protocol.py:224-238``) answers any prepare whose cycle id exists
with the same request hash as a safe retry (``replayed: true`` and a bundle) without looking at the cycle's
state. After ``POST /v1/abort`` (the host's model call failed), the host retries the user's turn with the same
request: ``POST /v1/prepare`` answers 200 with the *aborted* cycle's id and nothing in the body says it is
closed; the host calls its model and ``POST /v1/commit`` is then refused with 409 ("cycle ... was aborted"). The
retried answer is lost after the host was handed a cycle to commit.

Reproduction: over HTTP, prepare turn t2 of session s2; abort its cycle; prepare the same turn again (same body);
commit the cycle id that second prepare returned.

Expected: the prepare of an aborted turn is refused when it is asked (409 ``cycle_state``, e.g. "cycle ... was
aborted; use a new turn id"), or it returns a cycle that can be committed; never 200 with a cycle whose commit
is refused.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from altm.core.settings import Settings
from altm.interfaces.http import KeyStore, create_app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


async def test_a_prepare_after_an_abort_is_refused_or_committable(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "The billing deadline is December 15.", session="s1")]) as (_, app):
        keys = KeyStore(tmp_path / "keys.json")
        auth = {"Authorization": f"Bearer {keys.create('coder', SCOPE.path)}"}
        transport = httpx.ASGITransport(app=create_app(app, keys))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            body = {"scope": SCOPE.path, "session_id": "s2", "turn_id": "t2", "content": "billing deadline?"}
            prepared = await c.post("/v1/prepare", json=body, headers=auth)
            assert prepared.status_code == 200
            aborted = await c.post("/v1/abort", json={"cycle_id": prepared.json()["cycle_id"],
                                                      "reason": "the model call failed"}, headers=auth)
            assert aborted.status_code == 200
            retried = await c.post("/v1/prepare", json=body, headers=auth)
            if retried.status_code == 409:
                return  # refused when asked: fine
            assert retried.status_code == 200
            committed = await c.post("/v1/commit", json={"cycle_id": retried.json()["cycle_id"],
                                                         "assistant_content": "December 15."}, headers=auth)
    assert committed.status_code == 200, (
        f"prepare answered 200 (replayed={retried.json()['replayed']}) with a cycle whose commit is refused: "
        f"{committed.status_code} {committed.text}")
