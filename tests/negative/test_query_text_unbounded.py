"""One API call with a long query text holds the whole server for seconds to minutes.

What a user expects: the HTTP API bounds what one caller can make it do. A turn's content is refused over
``ALTM_MAX_CONTENT_BYTES`` (64 KiB, HTTP 422), the browser's search box over 2,000 characters, a body over
``ALTM_MAX_REQUEST_BYTES`` (1 MiB) with 413 (README, "API keys" and "Reliability: hostile input"). Recall and
drilldown are synchronous code inside ``async def`` routes, so while one runs no other request of any tenant is
served (``/healthz`` included).

Actual: ``QueryRequest.query`` and ``DrilldownRequest.query`` have no length bound, so any key (an agent key is
enough) sends up to 1 MiB of query text:

* ``POST /v1/query`` with 100,000 distinct words (~690 KB): ~8.6 s of CPU on the event loop (1 MiB: ~18 s;
  FTS and trigram stages each take seconds); a 64 KiB query — the largest a turn may be — takes ~0.5 s;
* ``POST /v1/drilldown`` with a query: every line of the memory is tested against every query term, with
  ``ln.casefold()`` recomputed per term (lines × terms); a 4,000-line memory and 25,000 terms take ~10 s, a
  64 KiB memory of short lines and a 1 MiB query minutes.

Suspected cause: ``altm/interfaces/http/_requests.py`` ``QueryRequest.query`` (``Field(min_length=1)``) and
``DrilldownRequest.query``/``marker`` have no ``max_length``; ``altm/app/_protocol.py`` ``drilldown`` (the
``matching = [...]`` line) is quadratic. Fix direction: bound query text (e.g. ``max_content_bytes`` or the
browser's 2,000 characters, 422 above it) and/or cap the number of distinct terms; casefold each line once.
"""

from __future__ import annotations

import time
from pathlib import Path

from altm.core.settings import Settings
from altm.store import MemoryQueries
from tests.support.browser import browser_world
from tests.support.turns import SCOPE, make_turn

FAST_S = 2.0
"""A refusal is immediate; a 64 KiB query (the largest turn) is answered in ~0.5 s on the same machine."""


def _refused_or_fast(status: int, took: float) -> bool:
    return status in (413, 422) or (status == 200 and took < FAST_S)


async def test_a_huge_recall_query_is_refused_or_cheap(settings: Settings, tmp_path: Path) -> None:
    async with browser_world(settings, tmp_path, [make_turn(1, "We're migrating the billing service.")]) as w:
        agent = {"Authorization": f"Bearer {w.keys['agent']}"}
        query = " ".join(f"w{i}" for i in range(100_000))  # ~690 KB: under the 1 MiB body limit
        started = time.perf_counter()
        r = await w.client.post("/v1/query", json={"scope": SCOPE.path, "query": query}, headers=agent)
        took = time.perf_counter() - started
        # actual: 200 after ~8.6 s, during which the server answered nobody else
        assert _refused_or_fast(r.status_code, took), f"{r.status_code} after {took:.1f} s"


async def test_a_drilldown_query_is_not_lines_times_terms(settings: Settings, tmp_path: Path) -> None:
    content = "\n".join(f"step {i} ok" for i in range(4000))  # ~50 KB: a turn under the 64 KiB limit
    async with browser_world(settings, tmp_path, [make_turn(1, content)]) as w:
        row = next(r for r in MemoryQueries(w.runtime.shards).listing(None, limit=100) if r["layer"] == "L0")
        marker = f"memory://{row['memory_id']}#{row['content_hash'][:12]}"
        agent = {"Authorization": f"Bearer {w.keys['agent']}"}
        query = " ".join(f"zz{i}" for i in range(25_000))  # ~190 KB of terms no line contains
        started = time.perf_counter()
        r = await w.client.post("/v1/drilldown", json={"scope": SCOPE.path, "marker": marker, "query": query},
                                headers=agent)
        took = time.perf_counter() - started
        # actual: 200 after seconds (4,000 lines × 25,000 terms substring tests, each recasefolding its line)
        assert _refused_or_fast(r.status_code, took), f"{r.status_code} after {took:.1f} s"
