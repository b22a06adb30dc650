"""A read asked for while the deployment shuts down, or queued when it closed, was refused with a bare
``RuntimeError`` or ``CancelledError`` (red team rt28's observation): the HTTP API answered 500 or dropped the
request without an answer. It is refused with ``ShuttingDown`` now (503, "shutting_down"), a retry's cue."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from altm.app import ShuttingDown
from altm.app._reads import ReadPool
from altm.core import Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


async def test_a_read_queued_when_the_pool_closes_is_refused_as_shutting_down() -> None:
    pool = ReadPool(1)
    started = threading.Event()

    def slow() -> str:
        started.set()
        time.sleep(0.3)
        return "read"

    running = asyncio.ensure_future(pool.run(slow))
    assert await asyncio.to_thread(started.wait, 5)
    queued = asyncio.ensure_future(pool.run(lambda: "never"))
    await asyncio.sleep(0.01)
    pool.close()
    assert await running == "read"  # a read running ends
    with pytest.raises(ShuttingDown, match="shutting down"):
        await queued
    with pytest.raises(ShuttingDown, match="shutting down"):
        await pool.run(lambda: "after")


async def test_http_answers_503_once_the_reads_are_closed(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "billing migration note")]) as (_rt, app):
        keys = KeyStore(s.data_dir / "keys.json")
        key = keys.create("coder", SCOPE.path)
        app.close()
        transport = httpx.ASGITransport(app=create_app(app, keys))
        async with httpx.AsyncClient(transport=transport, base_url="http://test",
                                     headers={"Authorization": f"Bearer {key}"}) as client:
            found: Any = await client.post("/v1/query", json={"scope": SCOPE.path, "query": "billing migration"})
    assert found.status_code == 503, found.text
    assert found.json()["error"] == "shutting_down"
