# ruff: noqa: C901, ASYNC110, ASYNC240, PTH208
"""Red team rt28 (kept as a regression test: no defect found).

recall off the event loop, under load, while the embedded pipeline writes and sessions are erased.

Many concurrent /v1/query, /v1/memories, /v1/drilldown, review and prepare_turn calls (three users, two sharing a
shard), some cancelled mid-read, while turns are ingested and derived and sessions erased. Nothing may fail, no
read sent after the writer applied an erasure may return the erased text, descriptors stay bounded, and once
everything settles no shard's write-ahead log holds the erased text and a TRUNCATE checkpoint completes."""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from pathlib import Path
from typing import Any

import httpx

from altm.core import Scope, Settings
from altm.interfaces.access import KeyStore
from altm.interfaces.http import create_app
from altm.store._reading import IDLE_PER_SHARD
from altm.wiring import open_embedded
from tests.support.memories import runtime_of
from tests.support.turns import SCOPE, colocated_scope, make_turn

PARTITIONS = 2
NEIGHBOUR = colocated_scope(PARTITIONS)
OTHER = Scope(tenant_id="t2", workspace_id="w1", user_id="u9", agent_id="a1")
USERS = (SCOPE, NEIGHBOUR, OTHER)
ERASED = 6
RUN_S = 6.0
TOKEN = re.compile(r"zq(\d+)xv")


def _secret(k: int) -> str:
    return f"zq{k}xv"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _owner_sees(deployment: Any, k: int) -> bool:
    """On the loop (the shards' owner): whether any shard still holds session e{k}'s secret."""
    for shard in deployment.shards.existing():
        if shard._db.execute("SELECT 1 FROM memories WHERE content LIKE ? LIMIT 1",
                             (f"%{_secret(k)}%",)).fetchone():
            return True
    return False


async def test_reads_under_load_with_erasures(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "data", partitions=PARTITIONS, embedder="none")
    rng = random.Random(28)
    failures: list[str] = []
    leaks: list[str] = []
    counts = {"query": 0, "memories": 0, "drilldown": 0, "review": 0, "prepare": 0, "replay": 0, "cancelled": 0,
              "turns": 0, "erasures": 0, "seen": 0}
    applied: dict[int, float] = {}
    async with open_embedded(s) as deployment:
        runtime, app = runtime_of(deployment), deployment.app
        base = [make_turn(i, f"billing migration note {i} for {u.user_id}", scope=u, session=f"b{n}")
                for n, u in enumerate(USERS) for i in range(6)]
        secrets = [make_turn(100 + k, f"the billing migration passphrase is {_secret(k)} keep it",
                             scope=SCOPE if k % 2 == 0 else NEIGHBOUR, session=f"e{k}") for k in range(ERASED)]
        await runtime.publish([*base, *secrets])
        await runtime.run_until_idle()
        for k in range(ERASED):
            assert _owner_sees(deployment, k)
        keys = KeyStore(s.data_dir / "keys.json")
        tokens = {u.path: keys.create(f"k{n}", u.path.rsplit("/", 1)[0]) for n, u in enumerate(USERS)}  # user keys
        transport = httpx.ASGITransport(app=create_app(app, keys))
        # markers of the secrets (drilldown targets)
        markers: dict[str, list[str]] = {u.path: [] for u in USERS}
        for u in USERS:
            for hit in app.search(u, None, "billing migration passphrase", top_k=50).hits:
                markers[u.path].append(f"memory://{hit.memory_id}#{hit.content_hash}")
        baseline_fds = _fds()
        peak = [baseline_fds]
        stop = asyncio.Event()
        deadline = time.monotonic() + RUN_S

        def leaked(where: str, sent: float, text: str) -> None:
            for m in TOKEN.finditer(text):
                k = int(m.group(1))
                counts["seen"] += 1
                if k in applied and sent > applied[k]:
                    leaks.append(f"{where}: erased {_secret(k)} returned by a read sent "
                                 f"{sent - applied[k]:.3f} s after the writer applied the erasure")

        async def pipeline() -> None:
            n = 0
            while not stop.is_set():
                u = USERS[n % 3]
                await runtime.publish([make_turn(1000 + n, f"billing migration follow up {n}", scope=u,
                                                 session=f"w{n % 4}")])
                counts["turns"] += 1
                n += 1
                await runtime.run_until_idle()
                await asyncio.sleep(0.005)

        async def eraser() -> None:
            await asyncio.sleep(0.3)
            for k in range(ERASED):
                scope = SCOPE if k % 2 == 0 else NEIGHBOUR
                await app.erase(scope, "session", session_id=f"e{k}")
                counts["erasures"] += 1
                while _owner_sees(deployment, k):
                    await asyncio.sleep(0.002)
                applied[k] = time.monotonic()
                await asyncio.sleep(RUN_S / (ERASED + 2))

        async def client_loop(n: int) -> None:
            u = USERS[n % 3]
            headers = {"Authorization": f"Bearer {tokens[u.path]}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers) as client:
                i = 0
                while time.monotonic() < deadline:
                    i += 1
                    kind = ("query", "memories", "drilldown", "review", "prepare", "replay")[(i + n) % 6]
                    sent = time.monotonic()
                    try:
                        if kind == "query":
                            r = await client.post("/v1/query", json={"scope": u.path, "query":
                                                                     "billing migration passphrase", "top_k": 50})
                        elif kind == "memories":
                            r = await client.get("/v1/memories", params={"scope": u.path, "limit": 500})
                        elif kind == "drilldown":
                            if not markers[u.path]:
                                continue
                            r = await client.post("/v1/drilldown", json={"scope": u.path,
                                                                         "marker": rng.choice(markers[u.path])})
                            if r.status_code in (404, 409, 422):  # erased or changed: an honest answer
                                counts[kind] += 1
                                continue
                        elif kind == "review":
                            r = await client.get("/v1/review", params={"scope": u.path})
                        else:
                            turn = f"p{n}-{i}" if kind == "prepare" else f"p{n}-replayed"
                            r = await client.post("/v1/prepare", json={
                                "scope": u.path, "session_id": f"e{n % ERASED}", "turn_id": turn,
                                "content": "what was the billing migration passphrase", "token_budget": 2000})
                    except Exception as exc:
                        failures.append(f"{kind}: {type(exc).__name__}: {exc}")
                        continue
                    counts[kind] += 1
                    if kind == "replay" and r.status_code == 409 and "erased" in r.text:
                        continue  # its session erased since it was first prepared: refused, as documented
                    if r.status_code != 200:
                        failures.append(f"{kind}: {r.status_code} {r.text[:300]}")
                        continue
                    leaked(kind, sent, r.text)

        async def canceller() -> None:
            while time.monotonic() < deadline:
                u = rng.choice(USERS)
                task = asyncio.ensure_future(app.read(app.search, u, None, "billing migration passphrase"))
                await asyncio.sleep(rng.random() * 0.01)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    counts["cancelled"] += 1
                except Exception as exc:
                    failures.append(f"cancelled read: {type(exc).__name__}: {exc}")

        async def fd_watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], _fds())
                await asyncio.sleep(0.01)

        background = [asyncio.create_task(pipeline()), asyncio.create_task(fd_watch())]
        erasing = asyncio.create_task(eraser())
        await asyncio.gather(*(client_loop(n) for n in range(9)), canceller(), canceller())
        await erasing
        stop.set()
        await asyncio.gather(*background)
        await runtime.run_until_idle()
        await asyncio.sleep(0.2)  # the reads' ends settled on the loop
        wal_hits = []
        for shard in deployment.shards.existing():
            wal = Path(str(shard.path) + "-wal")
            if wal.exists() and any(_secret(k).encode() in wal.read_bytes() for k in range(ERASED)):
                wal_hits.append(wal.name)
        busy = [shard._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                for shard in deployment.shards.existing()]
        readers = sum(shard._readers.count() for shard in deployment.shards.existing())
    assert not failures, failures[:10]
    assert not leaks, leaks[:10]
    assert len(applied) == ERASED
    assert counts["seen"] > 50, counts
    assert counts["cancelled"] > 20 and sum(counts[k] for k in ("query", "memories", "prepare")) > 100, counts
    assert peak[0] - baseline_fds < 40, f"descriptors grew {baseline_fds} -> {peak[0]}"
    assert readers <= IDLE_PER_SHARD * PARTITIONS, readers  # those kept idle, warm for the next reads
    assert not wal_hits, f"erased text still in {wal_hits} after every read settled"
    assert busy == [0] * len(busy), busy

