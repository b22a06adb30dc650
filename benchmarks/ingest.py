"""Ingest throughput through the embedded pipeline, end to end (publish → searchable), per stage, and the
embedder's raw throughput on the same texts in the same run (so the ratio pipeline/embedder is printed).

Two figures: *searchable* — every turn is in the word index and the vector index, so ``prepare_turn`` can
recall it (the embedded runtime runs capture, writer and embed first); *derived* — every stage is idle
(capsules, atoms, graph, verdicts, scenes, facets written and embedded too).

    python benchmarks/ingest.py [--data LOCOMO.json] [--turns N] [--out FILE.json]
    python benchmarks/ingest.py --rss --turns 50000      # peak memory of `altm ingest` (F13)

Turns come from the LoCoMo dev file when it is present (real conversation text), else are synthesised.
With ``--rss`` the turns are written to a JSONL file and ``altm ingest`` runs on it in a child process, with
the local embedder, while its resident set size is sampled every 0.2 s: the record has the peak and the
timeline. Past the dev file's end the turns repeat its text under new users and sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.app.stats import freshness
from altm.core import Role, Scope, TurnEvent
from altm.core.settings import Settings
from altm.store import shard_counts
from altm.vectors import VectorFilter
from altm.wiring import open_deployment, open_embedding
from benchmarks._record import config_stamp, file_sha256, write_record
from benchmarks.locomo import conversation_turns

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "locomo-dev" / "locomo-dev.json"
)


def turns_source(data: Path) -> str:
    """What ``load_turns`` reads, for a record's config stamp: the file (with its hash), or the synthetic turns
    it falls back to when the file is not there (a checkout outside the project's folder has no dev data)."""
    return f"{data} sha256:{file_sha256(data)[:16]}" if data.exists() else f"synthetic ({data} not found)"


def load_turns(data: Path, limit: int) -> list[TurnEvent]:
    """``limit`` turns of the LoCoMo file ``data`` (its text again, as other users, past its end), or synthetic
    turns when it is not there; those derive less per turn, so figures of the two do not compare (said on
    stderr, and in the record's ``source``)."""
    if not data.exists():
        print(f"{data} not found: synthetic turns instead (figures do not compare with LoCoMo text)",
              file=sys.stderr)
    if data.exists():
        base: list[TurnEvent] = []
        for sample in orjson.loads(data.read_bytes()):
            base += conversation_turns(sample)
        if not base:
            raise ValueError(f"{data} holds no conversation turns")
        turns = base[:limit]
        copy = 1
        while len(turns) < limit:  # more than the file holds: its text again, as other users
            for t in base[: limit - len(turns)]:
                scope = t.scope.model_copy(update={"user_id": f"{t.scope.user_id}-{copy}"})
                turns.append(TurnEvent.model_validate({**t.model_dump(), "scope": scope.model_dump(),
                                                       "event_id": ""}))
            copy += 1
        return turns
    from datetime import UTC, datetime, timedelta

    scope = Scope(tenant_id="bench", workspace_id="w", user_id="u", agent_id="a")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        TurnEvent(
            scope=scope,
            session_id=f"s{i // 25}",
            turn_id=f"t{i}",
            role=Role.USER,
            content=f"Message {i}: we decided to move service {i % 17} to region {i % 5} by Friday.",
            timestamp=t0 + timedelta(minutes=i),
        )
        for i in range(limit)
    ]


async def run(turns: list[TurnEvent], data_dir: Path) -> dict[str, Any]:
    deployment = await open_deployment(Settings(data_dir=data_dir, partitions=4), pipeline=True)
    await deployment.start()
    runtime = deployment.runtime
    assert runtime is not None
    try:
        vectors = deployment.vectors
        l0 = VectorFilter(any_of={"layer": ("L0",)})
        start = time.perf_counter()
        await runtime.publish(turns)
        while (vectors.count(l0) if vectors else 0) < len(turns):
            if not await runtime.step():
                break
        searchable_s = time.perf_counter() - start
        await runtime.run_until_idle()
        elapsed = time.perf_counter() - start
        searchable = vectors.count(l0) if vectors else 0
        memories = shard_counts(data_dir)["memories"]
        fresh = freshness(data_dir)
        stages = {
            name: {"records": m.records, "busy_s": round(m.busy_s, 3), "records_per_s": round(m.per_s, 1)}
            for name, m in runtime.stage_metrics().items()
        }
        return {
            "searchable_s": searchable_s,
            "searchable_turns_per_s": len(turns) / searchable_s,
            "seconds": elapsed,
            "turns_per_s": len(turns) / elapsed,
            "searchable_l0": searchable,
            "memories": memories,
            "stages": stages,
            "freshness": fresh,
        }
    finally:
        await deployment.close()


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of ``/proc/PID/status`` in KiB: VmRSS (all resident pages), RssAnon (the heap: what
    the process itself holds) or RssFile (mapped files the kernel may drop)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure_rss(turns: list[TurnEvent], tmp: Path) -> dict[str, Any]:
    """``altm ingest`` over the turns in a child process; its RSS sampled every 0.2 s."""
    import subprocess

    from altm.core import encode

    src = tmp / "turns.jsonl"
    with src.open("wb") as f:
        for t in turns:
            f.write(encode(t) + b"\n")
    cmd = [sys.executable, "-m", "altm", "ingest", str(src), "--data-dir", str(tmp / "data")]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    timeline: list[tuple[float, int]] = []
    anon: list[int] = []
    while proc.poll() is None:
        timeline.append((round(time.perf_counter() - start, 1), _rss_kib(proc.pid)))
        anon.append(_rss_kib(proc.pid, "RssAnon"))
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"altm ingest failed ({proc.returncode}): {err[-2000:]}")
    peak = max((kib for _, kib in timeline), default=0)
    return {"peak_rss_mib": peak / 1024, "peak_rss_anon_mib": max(anon, default=0) / 1024, "seconds": seconds,
            "turns_per_s": len(turns) / seconds,
            "timeline": [{"t_s": t, "rss_mib": round(k / 1024, 1)}
                         for t, k in timeline[:: max(1, len(timeline) // 200)]]}


def main_rss(args: argparse.Namespace, turns: list[TurnEvent]) -> None:
    with tempfile.TemporaryDirectory(prefix="altm-rss-") as tmp:
        result = measure_rss(turns, Path(tmp))
    print(f"altm ingest of {len(turns)} turns: peak RSS {result['peak_rss_mib']:.0f} MiB "
          f"(heap {result['peak_rss_anon_mib']:.0f} MiB), "
          f"{result['seconds']:.1f} s ({result['turns_per_s']:.1f} turns/s, fully derived)")
    quarters = result["timeline"][:: max(1, len(result["timeline"]) // 8)]
    print("  rss over time: " + ", ".join(f"{p['t_s']:.0f}s {p['rss_mib']:.0f}" for p in quarters))
    path = write_record(
        "ingest_rss",
        {"config": config_stamp(benchmark="ingest_rss", turns=len(turns), embedder="local", partitions=4,
                                source=turns_source(args.data), model=None),
         "aggregate": {k: v for k, v in result.items() if k != "timeline"},
         "timeline": result["timeline"]},
        args.out,
    )
    print(f"record: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--rss", action="store_true", help="peak memory of `altm ingest` in a child process")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    turns = load_turns(args.data, args.turns)
    if args.rss:
        main_rss(args, turns)
        return
    embedder = open_embedding(Settings(), {})  # the model the pipeline runs (ALTM_EMBEDDER, its weights)
    if embedder is None:
        sys.exit("ingest.py compares the pipeline with its embedder's raw rate: set ALTM_EMBEDDER=local or e5")
    texts = [t.content for t in turns]
    embedder.embed(texts[:64])
    start = time.perf_counter()
    embedder.embed(texts)
    raw = len(texts) / (time.perf_counter() - start)
    with tempfile.TemporaryDirectory(prefix="altm-ingest-") as tmp:
        result = asyncio.run(run(turns, Path(tmp) / "data"))
    assert result["searchable_l0"] == len(turns), "every turn must be searchable when the pipeline is idle"
    ratio = result["searchable_turns_per_s"] / raw
    print(f"{len(turns)} turns searchable in {result['searchable_s']:.1f} s: "
          f"{result['searchable_turns_per_s']:.1f} turns/s")
    print(f"embedder raw: {raw:.1f} texts/s (batch 64) -> pipeline/embedder = {ratio:.2f}")
    print(f"fully derived in {result['seconds']:.1f} s: {result['turns_per_s']:.1f} turns/s "
          f"({result['memories']} memories; {result['turns_per_s'] / raw:.2f} of the embedder)")
    for layer, f in result["freshness"].items():
        print(f"  freshness {layer}: p50 {f['p50_s']:.2f} s, p95 {f['p95_s']:.2f} s (publish -> stored; all turns "
              "published at once, so this is the backlog's wait)")
    for name, st in result["stages"].items():
        print(
            f"  {name:>8}: {st['records']:>6} records, {st['busy_s']:>7.2f} s busy, "
            f"{st['records_per_s']:>8.1f}/s"
        )
    path = write_record(
        "ingest",
        {
            "config": config_stamp(
                benchmark="ingest",
                turns=len(turns),
                source=turns_source(args.data),
                partitions=4,
                model=None,
            ),
            "aggregate": {
                "searchable_turns_per_s": result["searchable_turns_per_s"],
                "embedder_texts_per_s": raw,
                "pipeline_over_embedder": ratio,
                "searchable_s": result["searchable_s"],
                "derived_turns_per_s": result["turns_per_s"],
                "derived_over_embedder": result["turns_per_s"] / raw,
                "derived_s": result["seconds"],
            },
            "stages": result["stages"],
            "freshness": result["freshness"],
        },
        args.out,
    )
    print(f"record: {path}")


if __name__ == "__main__":
    main()
