"""Freshness under sustained load, in either runtime: turns are published at a steady rate (not all at once) while
the pipeline runs, and each memory's delay from its turn's publication to the writer storing it is read back
from the shards (word-searchable for L0, derived for L1-L4) and, for L0 turns, from the vector points' indexed
time (vector-searchable; embedded runtime with an embedder), as `altm stats` reports them.

    python benchmarks/freshness.py --runtime embedded --rate 20 --seconds 60 [--embedder local|none]
    python benchmarks/freshness.py --runtime kafka --broker kafka://127.0.0.1:19092 --rate 50 --seconds 60

A rate above what the pipeline sustains shows as freshness growing with the run's length (the timeline's lag
column says so); quote figures from rates the run kept up with. The record has the config stamp, the
aggregate per layer and one row per second (published, stored L0, lag).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.app.stats import freshness
from altm.bus import host_record
from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.store import count_layer, shard_counts
from altm.wiring import Deployment, open_deployment, vector_freshness
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, turns_source
from benchmarks.kafka_ingest import PARTITIONS, fresh_topics, lag, spread

TICK_S = 0.1


async def paced(turns: Sequence[TurnEvent], rate: float, publish: Callable[[list[TurnEvent]], Awaitable[None]],
                sample: Callable[[float, int], Awaitable[None]]) -> None:
    """Publish ``turns`` at ``rate`` per second in ticks of 0.1 s, sampling once a second."""
    start = time.perf_counter()
    sent, next_sample = 0, 1.0
    while sent < len(turns):
        due = min(len(turns), int((time.perf_counter() - start) * rate) + 1)
        if due > sent:
            await publish(list(turns[sent:due]))
            sent = due
        now = time.perf_counter() - start
        if now >= next_sample:
            await sample(now, sent)
            next_sample += 1.0
        await asyncio.sleep(TICK_S)


async def embedded(turns: list[TurnEvent], rate: float, embedder: str, tmp: Path) -> dict[str, Any]:
    data = tmp / "data"
    deployment = await open_deployment(Settings(data_dir=data, partitions=4, embedder=embedder), pipeline=True)
    await deployment.start(background=True)
    runtime = deployment.runtime
    assert runtime is not None
    rows: list[dict[str, Any]] = []

    async def sample(now: float, sent: int) -> None:
        rows.append({"t_s": round(now, 1), "published": sent, "l0": count_layer(data), "lag": await runtime.lag()})

    try:
        await paced(turns, rate, runtime.publish, sample)
        start = time.perf_counter()
        while await runtime.lag() or runtime.work.count():
            await asyncio.sleep(0.25)
            if time.perf_counter() - start > 600:
                raise SystemExit("the embedded pipeline did not catch up within 600 s of the last publish")
        drain_s = time.perf_counter() - start
    finally:
        await deployment.close()
    settings = Settings(data_dir=data, partitions=4, embedder=embedder)
    return {"freshness": freshness(data), "vector_l0": vector_freshness(data, settings), "drain_s": drain_s,
            "rows": rows}


async def _replica(broker: str, prefix: str, data: Path, keystore: str) -> Deployment:
    """The retrieval service's read replica (ALTM_READ_REPLICA), in this process."""
    deployment = await open_deployment(Settings(data_dir=data, broker=broker, topic_prefix=prefix,
                                                partitions=PARTITIONS, embedder="none", read_replica=True,
                                                keystore=keystore))
    await deployment.start()
    return deployment


async def _replicated(replica: Path, worker: Path, deadline_s: float = 600.0) -> None:
    """Until the replica holds every memory the worker has."""
    start = time.perf_counter()
    while shard_counts(replica).get("memories", 0) < shard_counts(worker).get("memories", 0):
        await asyncio.sleep(0.5)
        if time.perf_counter() - start > deadline_s:
            raise SystemExit("the read replica did not catch up within 600 s")


async def kafka(turns: list[TurnEvent], rate: float, broker: str, tmp: Path, *, replica: bool = False
                ) -> dict[str, Any]:
    bench = await fresh_topics(broker, "f")
    bootstrap, prefix, settings, topics, bus = bench.bootstrap, bench.prefix, bench.settings, bench.topics, bench.bus
    data = tmp / "data"
    keystore = f"sqlite:///{tmp / 'keys.db'}"
    env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": "none", "ALTM_WORKER_METRICS_PORT": "0",
           "ALTM_KEYSTORE": keystore}
    worker = subprocess.Popen(  # noqa: ASYNC220 - the worker process outlives the loop iteration
        [sys.executable, "-m", "altm", "worker", "--broker", broker, "--data-dir", str(data), "--partitions",
         str(PARTITIONS)], env=env, stdout=subprocess.DEVNULL, stderr=(tmp / "worker.log").open("wb"))
    rows: list[dict[str, Any]] = []

    async def publish(batch: list[TurnEvent]) -> None:
        await bus.publish_many([host_record(settings, t) for t in batch])

    async def sample(now: float, sent: int) -> None:
        rows.append({"t_s": round(now, 1), "published": sent, "l0": count_layer(data),
                     "lag": await lag(bootstrap, f"{prefix}workers", topics)})

    follower = None
    try:
        await asyncio.sleep(8)  # the worker joins its group before the clock starts
        if replica:
            follower = await _replica(broker, prefix, tmp / "replica", keystore)
        await paced(turns, rate, publish, sample)
        start = time.perf_counter()
        while count_layer(data) < len(turns) or await lag(bootstrap, f"{prefix}workers", topics):
            await asyncio.sleep(0.5)
            if time.perf_counter() - start > 600:
                tail = (tmp / "worker.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"the worker did not catch up within 600 s of the last publish; its log:\n{tail}")
        drain_s = time.perf_counter() - start
        fresh = freshness(data)
        if follower is not None:
            await _replicated(tmp / "replica", data)
            replica_fresh = freshness(tmp / "replica")
    finally:
        if follower is not None:
            await follower.close()
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
        await bus.stop()
    return {"freshness": fresh, "vector_l0": None, "drain_s": drain_s, "rows": rows,
            "replica_freshness": replica_fresh if replica else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", choices=("embedded", "kafka"), default="embedded")
    ap.add_argument("--rate", type=float, default=20.0, help="turns published per second")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to publish")
    ap.add_argument("--embedder", choices=("local", "none"), default="local", help="embedded runtime only")
    ap.add_argument("--broker", default="kafka://127.0.0.1:19092")
    ap.add_argument("--replica", action="store_true",
                    help="kafka: also run the retrieval service's read replica and report its freshness (turn "
                         "published -> recallable there)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    turns = spread(load_turns(DEFAULT_DATA, int(args.rate * args.seconds)))
    with tempfile.TemporaryDirectory(prefix="altm-freshness-") as tmp:
        if args.runtime == "embedded":
            result = asyncio.run(embedded(turns, args.rate, args.embedder, Path(tmp)))
        else:
            result = asyncio.run(kafka(turns, args.rate, args.broker, Path(tmp), replica=args.replica))
    print(f"{args.runtime}: {len(turns)} turns at {args.rate:g}/s for {args.seconds:g} s; caught up "
          f"{result['drain_s']:.1f} s after the last publish")
    for layer, f in result["freshness"].items():
        what = "word-searchable" if layer == "L0" else "derived"
        print(f"  {layer} {what}: p50 {f['p50_s']:.2f} s, p95 {f['p95_s']:.2f} s ({f['count']} memories)")
    for layer, f in (result.get("replica_freshness") or {}).items():
        print(f"  read replica {layer}: p50 {f['p50_s']:.2f} s, p95 {f['p95_s']:.2f} s ({f['count']} memories)")
    vec = result["vector_l0"]
    if vec:
        print(f"  L0 vector-searchable: p50 {vec['p50_s']:.2f} s, p95 {vec['p95_s']:.2f} s ({vec['count']} points)")
    lags = [r["lag"] for r in result["rows"]]
    if lags:
        print(f"  lag while publishing: max {max(lags)}, last {lags[-1]} records")
    path = write_record("freshness", {
        "config": config_stamp(benchmark="freshness", runtime=args.runtime, rate=args.rate, seconds=args.seconds,
                               source=turns_source(DEFAULT_DATA),
                               turns=len(turns), embedder=args.embedder if args.runtime == "embedded" else "none",
                               partitions=4 if args.runtime == "embedded" else PARTITIONS),
        "aggregate": {"freshness": result["freshness"], "vector_l0": vec, "drain_s": result["drain_s"],
                      "replica_freshness": result.get("replica_freshness")},
        "rows": result["rows"],
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
