"""One commit under the 1 MiB body limit holds the server's event loop for tens of seconds (red team of the interfaces,
round 17).

``ProtocolService._commit`` (altm/app/_protocol.py:309-311) collects the ids a commit names that were not in the
cycle's bundle: first the foreign citations, into a *list*, then each feedback id ``if m not in allowed and m not in
foreign`` -- a linear scan of that list per feedback id. ``POST /v1/commit`` (and the MCP ``commit`` tool) bound
neither list's length, only the body's bytes. With short distinct ids (``"c1x",`` is 6 bytes) a body under
``ALTM_MAX_REQUEST_BYTES`` carries ~70,000 citations and ~70,000 helpful ids: ~5e9 string comparisons, run
synchronously on the event loop that serves every tenant (and, in ``altm serve``, runs the embedded pipeline).
Measured: 13,000 + 13,000 ids (286 KB) took 1.1 s; a 1,024,155-byte body (70,000 + 70,000 ids) held the loop 29.2 s,
during which ``/healthz`` and every other request of every tenant waits. Any key can do it: it only needs a cycle of
its own (one ``/v1/prepare``).

This test sends 30,000 + 30,000 ids (~430 KB, well under the limit) and watches how long the event loop leaves a 50
ms timer waiting meanwhile. Expected: the commit is refused (or answered) without holding the loop -- ``/healthz``
answers within a second (no timer on the loop waits a second). Fix direction: keep ``foreign`` as a set beside the
list (or bound ``cited_memory_ids`` and the feedback lists, e.g. to the cycle's bundle size / a few hundred, in the
request models and the facade).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from altm.core.settings import Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

N = 30_000


def _short_ids(prefix: str, n: int) -> list[str]:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(n):
        s = ""
        while True:
            i, r = divmod(i, 36)
            s = digits[r] + s
            if i == 0:
                break
        out.append(prefix + s)
    return out


async def test_a_commit_with_many_foreign_ids_does_not_hold_the_event_loop(settings: Settings,
                                                                            tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "We deploy on Fridays.", session="s1")]) as (_rt, app):
        keys = KeyStore(tmp_path / "keys.json")
        auth = {"Authorization": f"Bearer {keys.create('coder', SCOPE.path)}"}
        transport = httpx.ASGITransport(app=create_app(app, keys))
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=300) as c:
            prepared = await c.post("/v1/prepare", headers=auth, json={
                "scope": SCOPE.path, "session_id": "s2", "turn_id": "t1", "content": "Which day do we deploy?"})
            assert prepared.status_code == 200, prepared.text
            body = {"cycle_id": prepared.json()["cycle_id"], "assistant_content": "On Fridays.",
                    "cited_memory_ids": _short_ids("c", N), "feedback": {"helpful": _short_ids("h", N)}}
            gaps: list[float] = []

            async def tick() -> None:  # how long the event loop leaves a 50 ms timer waiting
                while True:
                    started = time.perf_counter()
                    await asyncio.sleep(0.05)
                    gaps.append(time.perf_counter() - started - 0.05)

            ticker = asyncio.create_task(tick())
            await asyncio.sleep(0.2)
            done = await c.post("/v1/commit", headers=auth, json=body)
            health = await c.get("/healthz")
            await asyncio.sleep(0.2)  # the ticker records the wait it was kept in
            ticker.cancel()
    assert health.status_code == 200
    assert done.status_code in (413, 422), done.text[:200]
    waited = max(gaps)
    # actual: the loop is held ~6 s by the commit's quadratic check (29 s for a body just under 1 MiB)
    assert waited < 1.0, f"the event loop was held {waited:.1f} s by one commit of {N} + {N} foreign ids"
