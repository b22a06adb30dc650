"""Kafka ingest: turns/s end to end (publish → searchable) with 1 and 2 workers, and consumer lag over
time. Needs a broker: ``scripts/kafka.sh start`` (127.0.0.1:19092).

    python benchmarks/kafka_ingest.py [--broker kafka://127.0.0.1:19092] [--turns 600] [--workers 1,2]
                                      [--embedder none|local] [--profile DIR] [--logs DIR]

"Searchable" is when every turn is an L0 row in its shard (FTS-indexed in the same transaction); "derived"
is when the whole pipeline is quiet (no lag on any topic). Workers run without the embedder by default
(``ALTM_EMBEDDER=none``); with ``--embedder local`` each worker has a data dir of its own (one embedded
vector index per process) and the time until the last turn is vector-searchable is read from the indexes
after the run (compare with ``benchmarks/embed.py``, the embedder's raw rate).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as KafkaTP
from aiokafka.admin import AIOKafkaAdminClient

from altm.app.stats import freshness
from altm.bus import host_record
from altm.bus.kafka import KafkaBus, parse_broker_url
from altm.core import Role, Scope, TurnEvent, all_topic_specs
from altm.core.settings import Settings
from altm.store import source_times
from altm.wiring import open_embedding, open_vectors, resolve
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, turns_source

PARTITIONS = 4


def spread(turns: list[TurnEvent], users: int = 16) -> list[TurnEvent]:
    """The same conversation text spread over many users, so every partition gets work: each session (of a
    conversation, and of a copy of it) goes whole to one user, the sessions taking turns, and keeps its
    turns' order. Earlier the turns themselves took turns, each under its session's LoCoMo id
    (``session_N``, the same in every conversation): a user's session was pieces of many conversations'
    sessions, whose turns arrived out of order (1,325 of 2,000 did, each moving its successor's context) --
    a cost of the benchmark, not of a deployment, whose sessions are its own."""
    sessions: dict[tuple[str, str, str], int] = {}
    out = []
    for i, t in enumerate(turns):
        session = (t.scope.workspace_id, t.scope.user_id, t.session_id)
        n = sessions.setdefault(session, len(sessions))
        scope = Scope(tenant_id="bench", workspace_id="w", user_id=f"user{n % users}", agent_id="a")
        out.append(
            TurnEvent(
                scope=scope,
                session_id=f"{t.scope.workspace_id}.{t.scope.user_id}.{t.session_id}",
                turn_id=f"{t.turn_id}-{i}",  # unique when the text repeats past the dev file's end
                role=Role.USER,
                content=t.content,
                timestamp=t.timestamp,
            )
        )
    return out


class LagProbe:
    """A consumer group's lag over topics, asked again and again through one admin client and one consumer: a
    client started per sample cost about 0.4 s of connecting on this machine, which stretched the sampling to
    0.7 s (the searchable time was known to that) and took CPU from the workers it measured."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], partitions: int = PARTITIONS) -> None:
        self.group = group
        self.tps = [KafkaTP(t, p) for t in topics for p in range(partitions)]
        self._admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        self._probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)

    async def start(self) -> None:
        await self._admin.start()
        try:
            await self._probe.start()
        except BaseException:
            await self._admin.close()
            raise

    async def stop(self) -> None:
        try:
            await self._probe.stop()
        finally:
            await self._admin.close()

    async def lag(self) -> int:
        committed = await self._admin.list_consumer_group_offsets(self.group)
        ends = await self._probe.end_offsets(self.tps)
        return sum(max(0, ends[tp] - (committed[tp].offset if tp in committed else 0)) for tp in self.tps)


async def lag(bootstrap: str, group: str, topics: list[str], partitions: int = PARTITIONS) -> int:
    """The lag once (a probe started and stopped for it)."""
    probe = LagProbe(bootstrap, group, topics, partitions)
    await probe.start()
    try:
        return await probe.lag()
    finally:
        await probe.stop()


@dataclass
class BenchTopics:
    """A fresh set of topics under a random prefix on the broker, and a started bus to publish on them."""

    bootstrap: str
    prefix: str
    settings: Settings
    topics: list[str]  # the topics the workers consume (their group's lag is measured over them)
    bus: KafkaBus


async def fresh_topics(broker: str, tag: str, partitions: int = PARTITIONS) -> BenchTopics:
    bootstrap = parse_broker_url(broker)
    prefix = f"{tag}{uuid.uuid4().hex[:8]}."
    bus = KafkaBus(bootstrap)
    await bus.start()
    await bus.ensure_topics(all_topic_specs(partitions, prefix))
    return BenchTopics(bootstrap, prefix, Settings(topic_prefix=prefix, partitions=partitions),
                       [f"{prefix}{t}" for t in ("turns", "proposals", "changes", "control")], bus)


def _keep_logs(tmp: Path, logs: Path, workers: int) -> None:
    """The workers' logs, kept in ``logs`` (the data dir is not)."""
    logs.mkdir(parents=True, exist_ok=True)
    for i in range(workers):
        shutil.copy(tmp / f"worker-{i}.log", logs / f"{workers}-workers-{i}.log")


def _worker_command(profile: Path | None, i: int) -> list[str]:
    """``python -m altm worker``; under cProfile (stats written when it stops) with ``--profile DIR``."""
    if profile is None:
        return [sys.executable, "-m", "altm"]
    profile.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-m", "cProfile", "-o", str(profile / f"worker-{i}.prof"), "-m", "altm"]


def _l0_count(dirs: list[Path]) -> int:
    """Distinct L0 memories over the workers' data dirs: one dir shared by every worker (each row counted
    once), or one each with the embedder (a partition restored in a second dir after a rebalance counted
    once)."""
    ids: set[str] = set()
    for d in dict.fromkeys(dirs):
        for path in sorted((d / "shards").glob("shard-*.db")):
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                ids.update(r[0] for r in conn.execute("SELECT memory_id FROM memories WHERE layer='L0'"))
            except sqlite3.OperationalError:  # a shard still being made
                pass
            finally:
                conn.close()
    return len(ids)


def _vector_searchable(dirs: list[Path], start_epoch_ms: float, turns: int) -> dict[str, Any] | None:
    """With the embedder: when the last L0 turn became vector-searchable (the points' ``indexed_ms``), read from
    each worker's index once the workers have stopped; None when not every turn has a point."""
    first: dict[str, float] = {}  # L0 memory → when it first became vector-searchable, over every worker's index
    for d in dict.fromkeys(dirs):
        l0 = source_times(d, "L0") if (d / "shards").is_dir() else {}
        vectors = open_vectors(resolve(Settings(data_dir=d)), open_embedding(resolve(Settings(data_dir=d))),
                               read_only=True)
        if vectors is None:
            continue
        try:
            for m, at in vectors.payload_field("indexed_ms").items():
                if m in l0 and isinstance(at, int | float):
                    first[m] = min(first.get(m, float(at)), float(at))
        finally:
            vectors.close()
    points = len(first)
    if points < turns:
        return {"l0_points": points}
    seconds = (max(first.values()) - start_epoch_ms) / 1000
    return {"l0_points": points, "vector_searchable_s": seconds, "turns_per_s_vector_searchable": turns / seconds}


async def run(broker: str, turns: list[TurnEvent], workers: int, profile: Path | None = None,
              logs: Path | None = None, embedder: str = "none") -> dict[str, Any]:
    bench = await fresh_topics(broker, "b")
    bootstrap, prefix, settings, topics, bus = bench.bootstrap, bench.prefix, bench.settings, bench.topics, bench.bus
    with tempfile.TemporaryDirectory(prefix="altm-kafka-bench-") as tmp:
        # one embedded vector index per process: with the embedder, each worker has a data dir of its own
        dirs = [Path(tmp) / (f"data-{i}" if embedder != "none" else "data") for i in range(workers)]
        env = {**os.environ, "ALTM_TOPIC_PREFIX": prefix, "ALTM_EMBEDDER": embedder, "ALTM_WORKER_METRICS_PORT": "0",
               "ALTM_KEYSTORE": f"sqlite:///{Path(tmp) / 'keys.db'}"}
        probe = LagProbe(bootstrap, f"{prefix}workers", topics)
        probing = False
        procs = [
            subprocess.Popen(  # noqa: ASYNC220 - worker processes that outlive the loop iteration
                [
                    *_worker_command(profile, i),
                    "worker",
                    "--broker",
                    broker,
                    "--data-dir",
                    str(dirs[i]),
                    "--partitions",
                    str(PARTITIONS),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=(Path(tmp) / f"worker-{i}.log").open("wb"),
            )
            for i in range(workers)
        ]
        try:
            await asyncio.sleep(8 if embedder == "none" else 20)  # the workers join before the clock starts
            await probe.start()
            probing = True
            start, start_epoch_ms = time.perf_counter(), time.time() * 1000
            await bus.publish_many([host_record(settings, t) for t in turns])
            published = time.perf_counter() - start
            samples: list[dict[str, float]] = []
            searchable = derived = None
            while time.perf_counter() - start < 600:
                await asyncio.sleep(0.25)
                now = time.perf_counter() - start
                n = _l0_count(dirs)
                current_lag = await probe.lag()
                samples.append({"t_s": round(now, 1), "l0": n, "lag": current_lag})
                if searchable is None and n >= len(turns):
                    searchable = now
                if searchable is not None and current_lag == 0:
                    derived = now
                    break
            fresh = freshness(dirs[0]) if searchable is not None else {}
            if searchable is None or derived is None:  # say why rather than print a figure that is not there
                for p in procs:  # mode's worker writes every thread's and task's stack to its log on SIGUSR1
                    p.send_signal(signal.SIGUSR1)
                await asyncio.sleep(3)
                for i in range(workers):
                    tail = (Path(tmp) / f"worker-{i}.log").read_text(errors="replace")[-3000:]
                    print(f"worker {i} never made every turn searchable or derived; its log ends:\n{tail}",
                          file=sys.stderr)
        finally:
            if probing:
                await probe.stop()
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
            await bus.stop()
            if logs is not None:
                _keep_logs(Path(tmp), logs, workers)
        vector = _vector_searchable(dirs, start_epoch_ms, len(turns)) if embedder != "none" else None
    return {
        "workers": workers,
        "turns": len(turns),
        "publish_s": published,
        "searchable_s": searchable,
        "derived_s": derived,
        "turns_per_s_searchable": len(turns) / searchable if searchable else None,
        "turns_per_s_derived": len(turns) / derived if derived else None,
        "freshness": fresh,
        "vector": vector,
        "lag_samples": samples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="kafka://127.0.0.1:19092")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=600)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--profile", type=Path, help="run the workers under cProfile; stats in DIR/worker-N.prof")
    ap.add_argument("--logs", type=Path, help="keep the workers' logs in DIR")
    ap.add_argument("--embedder", default="none", choices=("none", "local"),
                    help="local: the workers embed (each with a data dir of its own) and the time to vector-"
                         "searchable is reported")
    args = ap.parse_args()
    turns = spread(load_turns(args.data, args.turns))
    results = []
    for n in [int(w) for w in args.workers.split(",")]:
        r = asyncio.run(run(args.broker, turns, n, args.profile / f"{n}-workers" if args.profile else None,
                            args.logs, args.embedder))
        results.append(r)
        lag_line = " ".join(
            f"{s['t_s']:.0f}s:{s['lag']}" for s in r["lag_samples"][:: max(1, len(r["lag_samples"]) // 12)]
        )
        if r["searchable_s"] is None or r["derived_s"] is None:
            print(f"{n} worker(s): not done within 600 s (L0 {r['lag_samples'][-1]['l0'] if r['lag_samples'] else 0}"
                  f"/{r['turns']}); lag over time {lag_line}", flush=True)
            continue
        print(
            f"{n} worker(s): {r['turns']} turns searchable in {r['searchable_s']:.1f} s "
            f"({r['turns_per_s_searchable']:.1f} turns/s), fully derived in {r['derived_s']:.1f} s "
            f"({r['turns_per_s_derived']:.1f} turns/s); lag over time {lag_line}",
            flush=True,
        )
        if r["vector"] is not None:
            v = r["vector"]
            print(f"  vector-searchable: {v['turns_per_s_vector_searchable']:.1f} turns/s" if
                  "vector_searchable_s" in v else f"  vector-searchable: only {v['l0_points']} L0 points")
        for layer, f in r["freshness"].items():
            print(f"  freshness {layer}: p50 {f['p50_s']:.2f} s, p95 {f['p95_s']:.2f} s (publish -> stored)")
    path = write_record(
        "kafka_ingest",
        {
            "config": config_stamp(
                benchmark="kafka_ingest", turns=args.turns, partitions=PARTITIONS, embedder=args.embedder,
                source=turns_source(args.data),
            ),
            "aggregate": {
                str(r["workers"]): {
                    k: r[k]
                    for k in ("searchable_s", "derived_s", "turns_per_s_searchable", "turns_per_s_derived", "freshness",
                              "vector")
                }
                for r in results
            },
            "runs": results,
        },
        args.out,
    )
    print(f"record: {path}")


if __name__ == "__main__":
    main()
