"""Red team rt28 (kept as a regression test: no defect found).

prepare_turn's idempotency under concurrent identical requests, a cancelled first prepare, and
retries racing an erasure (the replayed bundle is rebuilt off the loop)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from altm.app import ProtocolError
from altm.core import Settings
from altm.recall import Retriever
from altm.wiring import open_embedded
from tests.support.memories import runtime_of
from tests.support.turns import SCOPE, make_turn

ASK = "what was the billing migration passphrase"


async def test_concurrent_identical_prepares_and_a_cancelled_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings(data_dir=tmp_path / "data", partitions=2, embedder="none")
    async with open_embedded(s) as deployment:
        runtime, app = runtime_of(deployment), deployment.app
        await runtime.publish([make_turn(i, f"billing migration passphrase note {i}") for i in range(5)])
        await runtime.run_until_idle()
        same = await asyncio.gather(*(app.prepare_turn(SCOPE, "s1", "s1-t50", ASK, 800) for _ in range(8)))
        assert sum(not p.replayed for p in same) == 1
        assert len({p.cycle_id for p in same}) == 1
        assert len({tuple(p.bundle.memory_ids) for p in same}) == 1 and same[0].bundle.items
        original = Retriever.search

        def slow(self: Retriever, *args: Any, **kwargs: Any) -> Any:
            time.sleep(0.3)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Retriever, "search", slow)
        first = asyncio.ensure_future(app.prepare_turn(SCOPE, "s1", "s1-t51", ASK, 800))
        await asyncio.sleep(0.05)
        first.cancel()
        second = await asyncio.wait_for(app.prepare_turn(SCOPE, "s1", "s1-t51", ASK, 800), 10)
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not second.replayed and second.bundle.items
        monkeypatch.undo()
        retried = await app.prepare_turn(SCOPE, "s1", "s1-t51", ASK, 800)
        assert retried.replayed and retried.bundle.memory_ids == second.bundle.memory_ids


async def test_retries_racing_an_erasure(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "data", partitions=2, embedder="none")
    secret = "zq3xv"
    async with open_embedded(s) as deployment:
        runtime, app = runtime_of(deployment), deployment.app
        await runtime.publish([make_turn(i, f"billing migration passphrase {secret} {i}", session="e1")
                               for i in range(3)])
        await runtime.run_until_idle()
        first = await app.prepare_turn(SCOPE, "e1", "e1-t60", ASK, 800)
        assert secret in first.bundle.rendered
        await app.erase(SCOPE, "session", session_id="e1")
        applying = asyncio.ensure_future(runtime.run_until_idle())
        outcomes: list[tuple[float, Any]] = []
        done_at: list[float] = []

        async def retry() -> None:
            while not done_at or time.monotonic() - done_at[0] < 0.3:
                sent = time.monotonic()
                try:
                    outcomes.append((sent, await app.prepare_turn(SCOPE, "e1", "e1-t60", ASK, 800)))
                except ProtocolError as exc:
                    outcomes.append((sent, exc))
                await asyncio.sleep(0)

        async def watch() -> None:
            await applying
            done_at.append(time.monotonic())

        await asyncio.wait_for(asyncio.gather(watch(), *(retry() for _ in range(6))), 20)
    late = [o for sent, o in outcomes if sent > done_at[0]]
    shown = [o for o in late if not isinstance(o, Exception) and secret in o.bundle.rendered]
    assert late and not shown
