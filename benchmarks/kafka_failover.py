"""Failover time with and without standby copies (issue 13, ``ALTM_WORKER_STANDBY``). Needs a broker:
``scripts/kafka.sh start``.

    python benchmarks/kafka_failover.py [--broker kafka://127.0.0.1:19092] [--turns 2000] [--signal term|kill]
                                        [--out FILE.json]

One run per mode (standby off, then on), each on fresh topics: workers A and B, each with a data dir of its own
(the key store is shared: it is the deployment's secret, never on the log), derive ``--turns`` turns (16 users,
4 partitions, no embedder) until both are idle and, with standby, B's copies have caught up. Then A is stopped
(``term``: it leaves the group at once; ``kill``: SIGKILL, found dead after ``ALTM_WORKER_SESSION_TIMEOUT_S``, 6 s
here) and a probe turn is published for a user of one of A's partitions. Reported per run, from A's stop: until
B owns every partition (its log), until B's shards hold every memory and proposal A's shards held for those
partitions (restored), and until the probe turn is in B's shard (that user's memory goes on), plus the ingest
time (what the standby copies cost while both workers run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.bus import host_record
from altm.core import Role, Scope, TurnEvent, partition_for
from altm.store import shard_files
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, turns_source
from benchmarks.kafka_ingest import PARTITIONS, BenchTopics, fresh_topics, lag, spread
from benchmarks.kafka_restore import _stop, _worker

GIVEN = re.compile(r"given \d+ partition\(s\): \[([0-9, ]*)\]")
SESSION_TIMEOUT_S = 6


def partition_totals(data: Path) -> dict[int, tuple[int, int]]:
    """Per shard of ``data``: (memories, next proposals offset applied); (0, 0) for a shard being made."""
    out: dict[int, tuple[int, int]] = {}
    for partition, path in shard_files(data):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            memories = int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
            row = conn.execute("SELECT MAX(next_offset) FROM consumer_offsets WHERE topic LIKE '%proposals'").fetchone()
            out[partition] = (memories, int(row[0] or 0))
        except sqlite3.OperationalError:
            out[partition] = (0, 0)
        finally:
            conn.close()
    return out


def holds(data: Path, partition: int, content: str) -> bool:
    """Whether the shard of ``partition`` in ``data`` holds an L0 memory with this content."""
    path = dict(shard_files(data)).get(partition)
    if path is None:
        return False
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM memories WHERE layer='L0' AND content=?", (content,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def owned(log: Path) -> set[int] | None:
    """The proposal partitions the worker writing ``log`` was given last (None before its first assignment)."""
    found = GIVEN.findall(log.read_text(errors="replace"))
    return {int(p) for p in found[-1].split(",") if p.strip()} if found else None


async def _idle(bench: BenchTopics, dirs: tuple[Path, Path], standby: bool, timeout_s: float = 1800) -> None:
    """Lag 0 on every input topic and the shards unchanged over two seconds; with standby, every shard of B
    has applied what the same shard of A has (and the other way round)."""
    deadline = time.monotonic() + timeout_s
    before: Any = None
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = [partition_totals(d) for d in dirs]
        if await lag(bench.bootstrap, f"{bench.prefix}workers", bench.topics, bench.settings.partitions) == 0 \
                and now == before and (not standby or now[0] == now[1]):
            return
        before = now
    raise SystemExit(f"the workers were not idle within {timeout_s} s")


async def run(broker: str, turns: list[TurnEvent], standby: bool, how: signal.Signals) -> dict[str, Any]:
    bench = await fresh_topics(broker, "fo", PARTITIONS)
    try:
        with tempfile.TemporaryDirectory(prefix="altm-failover-bench-") as tmp:
            base = Path(tmp)
            env = {**os.environ, "ALTM_TOPIC_PREFIX": bench.prefix, "ALTM_EMBEDDER": "none",
                   "ALTM_KEYSTORE": f"sqlite:///{base / 'keys.db'}", "ALTM_WORKER_METRICS_PORT": "0",
                   "ALTM_WORKER_SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
                   "ALTM_WORKER_STANDBY": "true" if standby else "false"}
            dir_a, dir_b, log_a, log_b = base / "a", base / "b", base / "a.log", base / "b.log"
            a = _worker(broker, dir_a, env, log_a, PARTITIONS)
            b = _worker(broker, dir_b, env, log_b, PARTITIONS)
            try:
                start = time.perf_counter()
                await bench.bus.publish_many([host_record(bench.settings, t) for t in turns])
                await _idle(bench, (dir_a, dir_b), standby)
                ingest_s = time.perf_counter() - start
                b_owned = owned(log_b) or set()
                a_owned = set(range(PARTITIONS)) - b_owned
                if not a_owned or not b_owned:
                    raise SystemExit(f"the workers do not share the partitions (B owns {sorted(b_owned)})")
                totals_a = partition_totals(dir_a)
                target = {p: totals_a[p] for p in a_owned}
                probe = next(u for u in range(64) if partition_for(f"bench/w/user{u}", PARTITIONS) in a_owned)
                text = f"failover probe {uuid.uuid4().hex}"
                probe_turn = TurnEvent(scope=Scope(tenant_id="bench", workspace_id="w", user_id=f"user{probe}",
                                                   agent_id="a"), session_id="probe", turn_id="probe", role=Role.USER,
                                       content=text, timestamp=turns[-1].timestamp)
                probe_partition = partition_for(probe_turn.key, PARTITIONS)
                given_before = len(GIVEN.findall(log_b.read_text(errors="replace")))
                t0 = time.perf_counter()
                a.send_signal(how)
                await bench.bus.publish_many([host_record(bench.settings, probe_turn)])
                owns_s = restored_s = probe_s = None
                while time.perf_counter() - t0 < 600 and (owns_s is None or restored_s is None or probe_s is None):
                    await asyncio.sleep(0.1)
                    now = time.perf_counter() - t0
                    found = GIVEN.findall(log_b.read_text(errors="replace"))
                    if owns_s is None and len(found) > given_before and owned(log_b) == set(range(PARTITIONS)):
                        owns_s = now
                    totals_b = partition_totals(dir_b)
                    if restored_s is None and all(totals_b.get(p, (0, 0))[0] >= m and totals_b.get(p, (0, 0))[1] >= o
                                                  for p, (m, o) in target.items()):
                        restored_s = now
                    if probe_s is None and holds(dir_b, probe_partition, text):
                        probe_s = now
                restored_log = re.findall(r"restored \S+\[(\d+)\]: (\d+) proposals", log_b.read_text(errors="replace"))
            finally:
                _stop(a)
                _stop(b)
    finally:
        await bench.bus.stop()
    return {"standby": standby, "signal": how.name, "turns": len(turns), "ingest_s": ingest_s,
            "turns_per_s": len(turns) / ingest_s, "a_partitions": sorted(a_owned),
            "memories_taken_over": sum(m for m, _ in target.values()),
            "proposals_taken_over": sum(o for _, o in target.values()),
            "owns_all_s": owns_s, "restored_s": restored_s, "probe_turn_s": probe_s,
            "restores_logged": [(int(p), int(n)) for p, n in restored_log]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="kafka://127.0.0.1:19092")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--signal", choices=["term", "kill"], default="term")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    how = signal.SIGTERM if args.signal == "term" else signal.SIGKILL
    turns = spread(load_turns(args.data, args.turns))
    rows = [asyncio.run(run(args.broker, turns, standby, how)) for standby in (False, True)]
    for r in rows:
        print(f"standby {'on ' if r['standby'] else 'off'}: ingest {r['ingest_s']:.1f} s ({r['turns_per_s']:.1f} "
              f"turns/s); after SIG{args.signal.upper()} of A ({r['memories_taken_over']} memories, "
              f"{r['proposals_taken_over']} proposals on its partitions {r['a_partitions']}): B owns every partition "
              f"at {r['owns_all_s']} s, holds A's memories at {r['restored_s']} s, has the probe turn at "
              f"{r['probe_turn_s']} s; restores logged {r['restores_logged']}")
    path = write_record("kafka_failover", {
        "config": config_stamp(benchmark="kafka_failover", turns=args.turns, partitions=PARTITIONS, embedder=None,
                               broker=args.broker, signal=args.signal, session_timeout_s=SESSION_TIMEOUT_S,
                               source=turns_source(args.data)),
        "rows": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
