"""Every recall ran on the event loop thread: while one tenant's read ran, no other request (and, in ``serve``,
not the embedded pipeline) made progress.

``ProtocolService._prepare`` called the synchronous ``RecallService.search`` inside the coroutine, and the HTTP
routes ``/v1/query``, ``/v1/drilldown`` and ``/v1/memories`` (``async def``) called theirs likewise; the shard
connections were made with ``check_same_thread``, so no read could move to a thread. Measured (red team rt21): a
65,000-character query on a store of 8k / 32k memories held the loop 330-1,120 / 530-1,390 ms, and a 2-word query
of a 30-memory tenant sent 20 ms after it was answered 323-1,110 / 525-1,382 ms later (alone: 1-3 ms).

Now recall runs on the app's read threads (``MemoryApp.read``, ``ALTM_READ_THREADS``), each with a read-only
connection per shard, one snapshot per read (``altm.store.read_snapshot``); the loop's thread keeps the writes."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from altm.app import ShuttingDown
from altm.core import Scope, Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from altm.recall import Retriever
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

OTHER = Scope(tenant_id="t2", workspace_id="w1", user_id="u9", agent_id="a1")
SLOW_QUERY = "a very slow question about the billing migration"


def _spy(monkeypatch: pytest.MonkeyPatch, slow_s: float = 0.0) -> list[int]:
    """Threads ``Retriever.search`` ran on; a search for ``SLOW_QUERY`` takes ``slow_s`` more (a long read)."""
    ran_on: list[int] = []
    original = Retriever.search

    def spy(self: Retriever, *args: Any, **kwargs: Any) -> Any:
        ran_on.append(threading.get_ident())
        if slow_s and SLOW_QUERY in args:
            time.sleep(slow_s)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Retriever, "search", spy)
    return ran_on


async def test_prepare_turn_recalls_off_the_event_loop(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    ran_on = _spy(monkeypatch)
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(i, f"billing migration note {i}") for i in range(5)]) as (_rt, app):
        loop_thread = threading.get_ident()
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-t99", "What about the billing migration?", 1000)
        retried = await app.prepare_turn(SCOPE, "s1", "s1-t99", "What about the billing migration?", 1000)
    assert prepared.bundle.items and retried.replayed
    assert retried.bundle.memory_ids == prepared.bundle.memory_ids
    assert ran_on and loop_thread not in ran_on, "recall ran on the event loop thread, holding every other request"


async def test_a_long_read_holds_no_other_tenants_request(settings: Settings,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _spy(monkeypatch, slow_s=1.0)
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, f"billing migration note {i}") for i in range(5)]
    turns += [make_turn(10 + i, f"garden watering plan {i}", scope=OTHER, session="g1") for i in range(3)]
    async with store_with(s, turns) as (_rt, app):
        started = time.perf_counter()
        slow = asyncio.create_task(app.read(app.search, SCOPE, None, SLOW_QUERY))
        await asyncio.sleep(0.05)
        fast = await app.prepare_turn(OTHER, "g1", "g1-t9", "What is the garden watering plan?", 500)
        fast_s = time.perf_counter() - started
        assert not slow.done(), "the long read ended first: the test measured nothing"
        assert (await slow).hits
    assert fast.bundle.items
    assert fast_s < 0.8, f"another tenant's prepare_turn waited {fast_s:.2f} s behind a long read"


async def test_http_query_and_listing_read_off_the_event_loop(settings: Settings,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ran_on = _spy(monkeypatch)
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(i, f"billing migration note {i}") for i in range(5)]) as (_rt, app):
        keys = KeyStore(s.data_dir / "keys.json")
        key = keys.create("coder", SCOPE.path)
        listed_on: list[int] = []
        original_list = app.list_memories

        def listing(*args: Any, **kwargs: Any) -> Any:
            listed_on.append(threading.get_ident())
            return original_list(*args, **kwargs)

        monkeypatch.setattr(app, "list_memories", listing)
        transport = httpx.ASGITransport(app=create_app(app, keys))
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers) as client:
            found = await client.post("/v1/query", json={"scope": SCOPE.path, "query": "billing migration"})
            listed = await client.get("/v1/memories", params={"scope": SCOPE.path})
        loop_thread = threading.get_ident()
    assert found.status_code == 200 and found.json()["results"], found.text
    assert listed.status_code == 200 and listed.json()["count"] > 0, listed.text
    assert ran_on and loop_thread not in ran_on
    assert listed_on and loop_thread not in listed_on


async def test_a_read_after_close_is_refused(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "billing migration note")]) as (_rt, app):
        assert (await app.read(app.search, SCOPE, None, "billing migration")).hits
        app.close()
        with pytest.raises(ShuttingDown, match="shutting down"):
            await app.read(app.search, SCOPE, None, "billing migration")
