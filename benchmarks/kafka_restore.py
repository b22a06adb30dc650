"""Restore time: a worker with an empty data dir of its own takes over every partition another worker filled,
and restores the shards from the proposals log (issue 13). Needs a broker: ``scripts/kafka.sh start``.

    python benchmarks/kafka_restore.py [--broker kafka://127.0.0.1:19092] [--turns 4000] [--out FILE.json]

Worker A derives ``--turns`` turns (16 users, ``--partitions`` 4, no embedder) and stops. Worker B starts on an empty
data dir (the key store is shared: it is the deployment's secret, never on the log) and gets every partition.
Reported: B's start until its shards hold every memory A had and every proposal is applied (the restore,
the group join included), the proposals applied per second while restoring, and B's time to the first
restored row (the join). The record has a sample per quarter second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.bus import host_record
from altm.core import TurnEvent
from altm.store import count_layer
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, turns_source
from benchmarks.kafka_ingest import PARTITIONS, BenchTopics, fresh_topics, lag, spread


def _worker(broker: str, data: Path, env: dict[str, str], log: Path, partitions: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "altm", "worker", "--broker", broker, "--data-dir", str(data), "--partitions",
         str(partitions)], env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def shard_totals(data: Path, proposals_topic: str) -> tuple[int, int]:
    """(memories, proposals applied) over every shard of ``data`` (read-only; 0 for a shard being made)."""
    memories = applied = 0
    for path in sorted((data / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            memories += int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
            row = conn.execute("SELECT MAX(next_offset) FROM consumer_offsets WHERE topic=?",
                               (proposals_topic,)).fetchone()
            applied += int(row[0] or 0)
        except sqlite3.OperationalError:
            pass
        finally:
            conn.close()
    return memories, applied


async def _fill(broker: str, bench: BenchTopics, turns: list[TurnEvent], data: Path, env: dict[str, str],
                log: Path) -> None:
    """Worker A derives every turn, then stops."""
    partitions = bench.settings.partitions
    a = _worker(broker, data, env, log, partitions)
    try:
        await bench.bus.publish_many([host_record(bench.settings, t) for t in turns])
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            if count_layer(data) >= len(turns) and await lag(bench.bootstrap, f"{bench.prefix}workers",
                                                            bench.topics, partitions) == 0:
                return
        raise SystemExit(f"worker A did not derive {len(turns)} turns in 30 min; see {log}")
    finally:
        _stop(a)


async def run(broker: str, turns: list[TurnEvent], partitions: int = PARTITIONS) -> dict[str, Any]:
    bench = await fresh_topics(broker, "rs", partitions)
    proposals = f"{bench.prefix}proposals"
    try:
        with tempfile.TemporaryDirectory(prefix="altm-restore-bench-") as tmp:
            base = Path(tmp)
            env = {**os.environ, "ALTM_TOPIC_PREFIX": bench.prefix, "ALTM_EMBEDDER": "none",
                   "ALTM_KEYSTORE": f"sqlite:///{base / 'keys.db'}"}
            await _fill(broker, bench, turns, base / "a", env, base / "a.log")
            want_memories, want_applied = shard_totals(base / "a", proposals)
            samples: list[dict[str, float]] = []
            start = time.perf_counter()
            b = _worker(broker, base / "b", env, base / "b.log", partitions)
            first = done = None
            try:
                while time.perf_counter() - start < 1800:
                    await asyncio.sleep(0.25)
                    now = time.perf_counter() - start
                    memories, applied = shard_totals(base / "b", proposals)
                    samples.append({"t_s": round(now, 2), "memories": memories, "applied": applied})
                    if first is None and applied > 0:
                        first = now
                    if memories >= want_memories and applied >= want_applied:
                        done = now
                        break
                if done is None:
                    print((base / "b.log").read_text(errors="replace")[-3000:], file=sys.stderr)
            finally:
                _stop(b)
    finally:
        await bench.bus.stop()
    restoring = (done - first) if done is not None and first is not None else None
    return {"turns": len(turns), "memories": want_memories, "proposals": want_applied,
            "restored_s": done, "join_s": first, "restoring_s": restoring,
            "proposals_per_s": want_applied / restoring if restoring else None, "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="kafka://127.0.0.1:19092")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=4000)
    ap.add_argument("--partitions", type=int, default=PARTITIONS,
                    help="1 puts every memory in one shard (the restore time of a shard of a given size)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    turns = spread(load_turns(args.data, args.turns))
    result = asyncio.run(run(args.broker, turns, args.partitions))
    print(f"{result['memories']} memories from {result['turns']} turns ({result['proposals']} proposals): "
          f"restored {result['restored_s']} s after worker B started (first restored row at {result['join_s']} s), "
          f"{result['proposals_per_s']} proposals/s while restoring")
    path = write_record("kafka_restore", {
        "config": config_stamp(benchmark="kafka_restore", turns=args.turns, partitions=args.partitions, embedder=None,
                               broker=args.broker, source=turns_source(args.data)),
        "aggregate": {k: v for k, v in result.items() if k != "samples"}, "samples": result["samples"],
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
