"""prepare_turn and commit_turn accept a message over ALTM_MAX_CONTENT_BYTES, then it is dead-lettered
(red team, recall surface).

README ("Reliability: hostile input"): input is bounded when it is read, "content up to
`ALTM_MAX_CONTENT_BYTES` (refused before it is published)"; `altm ingest` does refuse it before publishing
(altm/app/ingest.py:70). The runtime protocol does not check it: ``ProtocolService.prepare_turn`` and
``commit_turn`` (altm/app/_protocol.py) publish the turn whatever its size, the HTTP API's only bound is the
1 MiB body, and ``PrepareRequest.content``/``CommitRequest.assistant_content`` have no ``max_length``. A
70 KB message answers 200 with a cycle id and a bundle, the commit answers "committed", and capture then
dead-letters both turns (altm/pipeline/processors/capture.py:39): neither the user's message nor the answer
is ever stored, and the caller was told nothing.

A user expects the request refused with the reason (422 or 413, as the rest of the input is) or the message
stored: never a success for a message the memory silently drops.
"""

from __future__ import annotations

import httpx

from altm.core.settings import Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

BIG = "The billing deadline is January 10. " * 2000  # 72,000 bytes: over the 65,536 default, under 1 MiB


async def test_an_oversize_prepare_and_commit_are_refused_or_stored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    assert len(BIG.encode()) > s.max_content_bytes
    async with store_with(s, [make_turn(1, "hello")]) as (rt, app):
        keys = KeyStore(s.data_dir / "keys.json")
        key = {"X-API-Key": keys.create("coder", SCOPE.path)}
        transport = httpx.ASGITransport(app=create_app(app, keys), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            prepared = await client.post("/v1/prepare", headers=key, json={
                "scope": SCOPE.path, "session_id": "s2", "turn_id": "s2-t1", "content": BIG})
            if prepared.status_code in (413, 422):
                return  # refused with a reason: what the README promises
            assert prepared.status_code == 200, prepared.text[:300]
            committed = await client.post("/v1/commit", headers=key, json={
                "cycle_id": prepared.json()["cycle_id"], "assistant_content": BIG})
            assert committed.status_code == 200, committed.text[:300]
        await rt.run_until_idle()
    stored = rows(s.data_dir, "SELECT role FROM memories WHERE session_id='s2' AND layer='L0'")
    assert sorted(r["role"] for r in stored) == ["assistant", "user"], (
        f"prepare and commit answered 200 for a {len(BIG.encode())}-byte turn, but the memory holds "
        f"{stored}: both turns were dead-lettered")
