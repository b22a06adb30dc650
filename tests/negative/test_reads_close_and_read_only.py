"""Red team rt28 (kept as a regression test: no defect found).

a deployment closed while reads run and wait, opened again on the same data dir; a read-only
deployment serving recall while another deployment writes and erases."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from altm.app import PreparedTurn
from altm.core import Settings
from altm.recall import Retriever, SearchResult
from altm.wiring import open_deployment, open_embedded
from tests.support.memories import runtime_of
from tests.support.turns import SCOPE, colocated_scope, make_turn


def _slow_search(monkeypatch: pytest.MonkeyPatch, hold_s: float) -> None:
    original = Retriever.search

    def slow(self: Retriever, *args: Any, **kwargs: Any) -> Any:
        found = original(self, *args, **kwargs)  # its snapshot open
        time.sleep(hold_s)
        return found

    monkeypatch.setattr(Retriever, "search", slow)


async def test_close_while_reads_run_and_wait_then_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings(data_dir=tmp_path / "data", partitions=2, embedder="none", read_threads=2)
    async with open_embedded(s) as deployment:
        runtime = runtime_of(deployment)
        await runtime.publish([make_turn(i, f"billing migration note {i}") for i in range(5)])
        await runtime.run_until_idle()
    _slow_search(monkeypatch, 0.3)
    deployment = await open_deployment(s, pipeline=True)
    await deployment.start()
    app = deployment.app
    reads = [asyncio.ensure_future(app.read(app.search, SCOPE, None, "billing migration")) for _ in range(6)]
    prepares = [asyncio.ensure_future(app.prepare_turn(SCOPE, "s1", f"s1-t9{i}", "billing migration?", 500))
                for i in range(2)]
    await asyncio.sleep(0.05)  # two running, the others queued
    started = time.monotonic()
    await asyncio.wait_for(deployment.close(), 10)
    closing_s = time.monotonic() - started
    outcomes = await asyncio.gather(*reads, *prepares, return_exceptions=True)
    assert closing_s < 5
    assert not [t.name for t in threading.enumerate() if t.name.startswith("altm-read")]
    answered = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert answered and len(answered) + len(refused) == 8
    for o in answered:
        assert o.bundle.items if isinstance(o, PreparedTurn) else isinstance(o, SearchResult) and o.hits
    # the same data dir opens again and works
    monkeypatch.undo()
    async with open_embedded(s) as again:
        runtime = runtime_of(again)
        await runtime.publish([make_turn(20, "billing migration after restart")])
        await runtime.run_until_idle()
        found = await asyncio.wait_for(again.app.read(again.app.search, SCOPE, None, "restart"), 10)
        assert any("restart" in h.content for h in found.hits)
        prepared = await asyncio.wait_for(again.app.prepare_turn(SCOPE, "s1", "s1-t90", "billing migration?", 500), 10)
        assert prepared.bundle.items


async def test_read_only_deployment_beside_a_writer(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "data", partitions=2, embedder="none")
    neighbour = colocated_scope(2)
    secret = "zq7xv"
    failures: list[str] = []
    leaks: list[str] = []
    n_reads = 0
    async with open_embedded(s) as writer:
        runtime = runtime_of(writer)
        await runtime.publish([make_turn(i, f"billing migration note {i}") for i in range(5)]
                              + [make_turn(50, f"billing migration passphrase {secret}", session="e1"),
                                 make_turn(51, "billing migration for the neighbour", scope=neighbour, session="n1")])
        await runtime.run_until_idle()
        reader = await open_deployment(s, read_only=True)
        await reader.start()
        try:
            ro = reader.app
            applied: list[float] = []
            stop = asyncio.Event()

            async def read_loop(n: int) -> None:
                nonlocal n_reads
                scope = SCOPE if n % 2 == 0 else neighbour
                while not stop.is_set():
                    sent = time.monotonic()
                    try:
                        if n % 3 == 0:
                            text = str(await ro.read(ro.list_memories, scope, limit=500))
                        else:
                            text = str((await ro.read(ro.search, scope, None, "billing migration passphrase",
                                                      top_k=50)).hits)
                    except Exception as exc:
                        failures.append(f"{type(exc).__name__}: {exc}")
                        continue
                    n_reads += 1
                    if secret in text and applied and sent > applied[0]:
                        leaks.append(f"read sent {sent - applied[0]:.3f} s after the erasure returned it")

            async def writes() -> None:
                for i in range(40):
                    await runtime.publish([make_turn(100 + i, f"billing migration follow up {i}",
                                                     scope=SCOPE if i % 2 else neighbour, session="w")])
                    await runtime.run_until_idle()
                    if i == 10:
                        await writer.app.erase(SCOPE, "session", session_id="e1")
                        await runtime.run_until_idle()
                        applied.append(time.monotonic())
                    await asyncio.sleep(0.01)
                stop.set()

            await asyncio.wait_for(asyncio.gather(writes(), *(read_loop(n) for n in range(6))), 30)
        finally:
            await asyncio.wait_for(reader.close(), 10)
        # one more write: a truncation a reader of the other deployment held off is retried after it
        await runtime.publish([make_turn(300, "billing migration last")])
        await runtime.run_until_idle()
        wal_hits = [p.name for p in (s.data_dir / "shards").glob("shard-*.db-wal") if secret.encode() in p.read_bytes()]
        busy = [shard._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                for shard in writer.shards.existing()]
    assert not failures, failures[:5]
    assert not leaks, leaks[:5]
    assert n_reads > 50
    assert not wal_hits
    assert busy == [0] * len(busy)
