"""How long one tenant's short prepare_turn waits behind another tenant's long one (embedded mode).

    python benchmarks/recall_concurrency.py [--size 8000] [--users 10] [--rounds 20] [--out FILE.json]

A synthetic store (``benchmarks/latency.py``'s generator: rows straight into the shards, random unit vectors
into the embedded index; the local embedder embeds the queries) is served by one process. Each round sends a
long ``prepare_turn`` for one user (a pasted text of ``--long-chars`` characters, the recall query limit) and,
``--gap-ms`` later, a six-word one for another user, and records when each is answered (the short one from
when it arrives, ``--gap-ms`` after the long one); the short one is also timed alone. With recall on the event
loop the short one waited for the long one's read; off the loop it does not. Run it from each checkout to
compare (it calls only ``prepare_turn``).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import Scope
from altm.core.settings import Settings
from benchmarks._record import config_stamp, percentile, write_record
from benchmarks.latency import PARTITIONS, _words, generate


def _scope(user: int) -> Scope:
    return Scope(tenant_id="bench", workspace_id="w", user_id=f"user{user}", agent_id="agent0")


async def _timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return (time.perf_counter() - start) * 1000


async def serve(data_dir: Path, rounds: int, users: int, long_chars: int, gap_ms: float) -> list[dict[str, Any]]:
    from altm.wiring import open_embedded

    rng = random.Random(5)
    nonce = time.time_ns()
    rows: list[dict[str, Any]] = []
    async with open_embedded(Settings(data_dir=data_dir, partitions=PARTITIONS)) as deployment:
        memory = deployment.app

        def prepare(user: int, turn: str, text: str) -> Any:
            return memory.prepare_turn(_scope(user), "s1", f"{nonce}-{turn}", text, 2000)

        for r in range(rounds + 2):
            long_text = ""
            while len(long_text) < long_chars:
                long_text += " ".join(_words(rng, 12)) + ". "
            short_text = " ".join(_words(rng, 6)) + "?"
            alone = await _timed(prepare(1 + r % (users - 1), f"a{r}", short_text))
            sent = time.perf_counter()
            long_task = asyncio.create_task(_timed(prepare(0, f"l{r}", long_text[:long_chars])))
            await asyncio.sleep(gap_ms / 1000)
            # from when the short one arrives (``gap_ms`` after the long one), not from when this loop got to send
            # it: a loop held by the long read sends it late, as a server reads a request late
            await prepare(1 + r % (users - 1), f"b{r}", short_text)
            behind = (time.perf_counter() - sent) * 1000 - gap_ms
            long_ms = await long_task
            if r >= 2:  # warm-up rounds left out
                rows.append({"round": r - 2, "short_alone_ms": alone, "short_beside_long_ms": behind,
                             "long_ms": long_ms})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=8000)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--long-chars", type=int, default=60_000)
    ap.add_argument("--gap-ms", type=float, default=20.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="altm-concurrency-") as tmp:
        data_dir = Path(tmp) / "data"
        generate(data_dir, args.size, args.users)
        rows = asyncio.run(serve(data_dir, args.rounds, args.users, args.long_chars, args.gap_ms))
    figures = {key: {"p50": statistics.median(r[key] for r in rows), "p95": percentile([r[key] for r in rows], 0.95)}
               for key in ("short_alone_ms", "short_beside_long_ms", "long_ms")}
    for key, f in figures.items():
        print(f"{key}: p50 {f['p50']:.1f} ms, p95 {f['p95']:.1f} ms")
    path = write_record("recall_concurrency", {
        "config": config_stamp(benchmark="recall_concurrency", size=args.size, users=args.users, rounds=args.rounds,
                               long_chars=args.long_chars, gap_ms=args.gap_ms),
        "aggregate": figures,
        "items": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
