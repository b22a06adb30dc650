"""Every recall runs on the event loop thread: while one tenant's read runs, no other request (and, in ``serve``,
not the embedded pipeline) makes progress.

``ProtocolService._prepare`` (altm/app/_protocol.py:269) calls the synchronous ``RecallService.search`` inside the
coroutine, and the HTTP routes ``/v1/query`` and ``/v1/drilldown`` (altm/interfaces/http/_app.py:102-113, ``async
def``) and ``/v1/memories`` call theirs likewise; the shard connections are made with ``check_same_thread``
(altm/store/_shard.py:60,78), so no read can move to a thread today, and even the query embedding, done on a
helper thread, is waited for synchronously (``Concurrent.result`` in ``Retriever._matching``). Measured (red team
rt21): a 65,000-character query on a store of 8k / 32k memories held the loop 330-1,120 / 530-1,390 ms, and a
2-word query of a 30-memory tenant sent 20 ms after it was answered 323-1,110 / 525-1,382 ms later (alone: 1-3 ms).

Expected: recall runs off the event loop (per-thread read-only connections in WAL mode and ``asyncio.to_thread``),
so one read holds no other tenant."""

from __future__ import annotations

import threading

import pytest

from altm.core import Settings
from altm.recall import Retriever
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

GAP = pytest.mark.xfail(strict=True, reason=(
    "known gap (README, Known gaps): recall runs on the event loop thread (the shard connections are"
    " bound to the thread that opened them; reads off the loop need read-only connections per thread)"))



@GAP
async def test_prepare_turn_recalls_off_the_event_loop(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    ran_on: list[int] = []
    original = Retriever.search

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        ran_on.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Retriever, "search", spy)
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(i, f"billing migration note {i}") for i in range(5)]) as (_rt, app):
        loop_thread = threading.get_ident()
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-t99", "What about the billing migration?", 1000)
    assert prepared.bundle.items
    assert ran_on and loop_thread not in ran_on, "recall ran on the event loop thread, holding every other request"
