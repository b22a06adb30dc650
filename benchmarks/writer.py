"""The writer alone: proposals/s and microseconds per proposal kind, applied from a real proposals log.

The turns (LoCoMo dev text, or synthetic ones without it) are ingested by the embedded pipeline with no
embedder; its proposals log is then applied again into fresh shards by a writer in batches of
``--batch`` records (as a lane hands them over: one shard transaction per partition and batch), timed, with
each op's own time measured around it. No broker, no stage and no model run during the timed part, so the
figure is what one writer can apply on this machine (the bound of a restore, a standby copy, and of the
capture and derive throughput of a worker, whose writer lane is the same code). The fresh shards' state hash
must equal the pipeline's; both are made by the same writer, so that says the log applies again to the same
state, not that the writer stores what an earlier commit stored: the hash is printed and recorded, to compare
across commits (the state hash covers the memories, graph and governance rows, not the offsets or outbox).

    python benchmarks/writer.py [--turns 2000] [--batch 500] [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.bus import Record
from altm.core import Proposal, TurnEvent, decode_event
from altm.core.settings import Settings
from altm.core.topics import Topic
from altm.pipeline.writer import Writer, _apply
from altm.store import ShardSet
from altm.wiring import open_deployment, state_hash
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, turns_source

PARTITIONS = 4


def bench_settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, partitions=PARTITIONS, embedder="none")


async def proposals_log(turns: list[TurnEvent], data_dir: Path) -> list[Record]:
    """Ingest ``turns`` with the embedded pipeline until it is idle; its proposals log, opened, in order."""
    deployment = await open_deployment(bench_settings(data_dir), pipeline=True)
    await deployment.start()
    try:
        runtime = deployment.runtime
        assert runtime is not None
        await runtime.publish(turns)
        await runtime.run_until_idle()
        topic = f"{deployment.settings.topic_prefix}{Topic.PROPOSALS.value}"
        return list(await deployment.bus.read_all([topic]))
    finally:
        await deployment.close()


def op_of(record: Record) -> str:
    """A proposal's op, and its layer for a memory upsert (an L0 message costs what an atom does not)."""
    event = decode_event(record.value)
    return op_label(event) if isinstance(event, Proposal) else "other"


def op_label(p: Proposal) -> str:
    """The proposal's op, with the layer of a memory upsert's memory."""
    memory = getattr(p, "memory", None)
    return f"{p.op.value}:{memory.layer.value}" if memory is not None else str(p.op.value)


@contextmanager
def op_timer() -> Iterator[dict[str, list[float]]]:
    """Seconds spent in each applied op, by op (the writer's ``apply_op`` wrapped for the run)."""
    spent: dict[str, list[float]] = defaultdict(list)
    inner = getattr(_apply, "apply_op")  # noqa: B009 - the writer's own binding of it, replaced for the run

    def timed(tx: Any, p: Any, ctx: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(tx, p, ctx)
        finally:
            spent[op_label(p)].append(time.perf_counter() - start)

    setattr(_apply, "apply_op", timed)  # noqa: B010
    try:
        yield spent
    finally:
        setattr(_apply, "apply_op", inner)  # noqa: B010


def batches(records: Sequence[Record], size: int) -> Iterator[list[Record]]:
    """The log in lane-sized batches, partitions interleaved as a fetch returns them."""
    for i in range(0, len(records), size):
        yield list(records[i:i + size])


def apply_log(records: Sequence[Record], target: Path, batch: int, *, count: list[int] | None = None
              ) -> tuple[float, float, dict[str, list[float]]]:
    """Apply ``records`` into fresh shards under ``target``; (seconds, CPU seconds, per-op seconds). With
    ``count``, every SQL statement the shards run (triggers' included) adds one to ``count[0]`` (slower: not for
    timing)."""
    settings = bench_settings(target)
    shards = ShardSet(target, PARTITIONS)
    try:
        for p in range(PARTITIONS):
            shard = shards.get(p)  # opened (and migrated) before the clock starts
            if count is not None:
                shard._db.set_trace_callback(lambda _sql: count.__setitem__(0, count[0] + 1))
        writer = Writer(shards, settings)
        with op_timer() as spent:
            start, cpu = time.perf_counter(), time.process_time()  # CPU time: less noisy on a shared machine
            for chunk in batches(records, batch):
                writer.apply_batch(chunk, PARTITIONS)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        return seconds, cpu, dict(spent)
    finally:
        shards.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    turns = load_turns(args.data, args.turns)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        start = time.perf_counter()
        records = asyncio.run(proposals_log(turns, source))
        print(f"ingested {len(turns)} turns in {time.perf_counter() - start:.1f} s: {len(records)} proposals")
        expected = state_hash(source, bench_settings(source))
        print(f"state hash {expected}")
        runs: list[dict[str, Any]] = []
        per_op: dict[str, list[float]] = defaultdict(list)
        for i in range(args.repeat):
            target = Path(tmp) / f"applied-{i}"
            seconds, cpu, spent = apply_log(records, target, args.batch)
            same = state_hash(target, bench_settings(target)) == expected
            runs.append({"run": i, "seconds": round(seconds, 3), "cpu_s": round(cpu, 3),
                         "proposals_per_s": round(len(records) / seconds, 1),
                         "proposals_per_cpu_s": round(len(records) / cpu, 1), "same_state_hash": same})
            print(f"run {i}: {len(records)} proposals in {seconds:.2f} s = {len(records) / seconds:,.0f}/s "
                  f"({len(records) / cpu:,.0f} per CPU second), state hash {'equal' if same else 'DIFFERENT'}")
            for op, times in spent.items():
                per_op[op].append(sum(times) / len(times))
            if not same:
                raise SystemExit("the writer stored another state than the pipeline did")
        statements = [0]
        apply_log(records, Path(tmp) / "counted", args.batch, count=statements)
        per_proposal = statements[0] / len(records)
        print(f"SQL statements (triggers' included): {statements[0]:,}, {per_proposal:.1f} per proposal")
        counts: dict[str, int] = defaultdict(int)
        for rec in records:
            counts[op_of(rec)] += 1
        rows = [{"op": op, "count": counts.get(op, 0), "median_us": round(statistics.median(v) * 1e6, 1)}
                for op, v in sorted(per_op.items(), key=lambda kv: -counts.get(kv[0], 0))]
        rate = statistics.median(r["proposals_per_s"] for r in runs)
        cpu_rate = statistics.median(r["proposals_per_cpu_s"] for r in runs)
        print(f"median {rate:,.0f} proposals/s, {cpu_rate:,.0f} per CPU second ({1e6 / rate:.0f} us each, in the "
              "writer's batches with offsets, audit and outbox); per op (median over runs of the mean, inside the "
              "op):")
        for row in rows:
            print(f"  {row['op']:<28} {row['count']:>6}  {row['median_us']:>8.1f} us")
        path = write_record("writer", {
            "config": config_stamp(turns=len(turns), batch=args.batch, partitions=PARTITIONS,
                                   source=turns_source(args.data), proposals=len(records)),
            "state_hash": expected,
            "median_proposals_per_s": rate, "median_proposals_per_cpu_s": cpu_rate,
            "sql_statements_per_proposal": round(per_proposal, 2), "runs": runs, "per_op": rows,
        }, args.out)
        print(f"record: {path}")


if __name__ == "__main__":
    main()
