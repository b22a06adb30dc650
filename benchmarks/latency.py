"""prepare_turn latency against store size (embedded mode), and the serving process's peak RSS.

    python benchmarks/latency.py [--sizes 10000,100000,1000000] [--queries 200] [--users 10] [--out FILE.json]

For each size a synthetic store is generated in its own process (memory rows written straight into the
shards, the graph, and random unit vectors into the embedded Qdrant index: it measures the stores at that
size, not the pipeline), then a fresh process serves ``prepare_turn`` (default preset, token budget 2000)
and reports p50/p95/p99 and its own peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import Scope, content_hash, derive_id, partition_for
from altm.core.settings import Settings
from altm.store import MEMORY_COLUMNS, ShardSet
from altm.store._text_index import apply_pending
from benchmarks._record import config_stamp, percentile, write_record

DOMAIN_WORDS = [
    "deadline",
    "billing",
    "migration",
    "refund",
    "invoice",
    "payment",
    "service",
    "deploy",
    "canary",
    "rollback",
    "schema",
    "postgres",
    "kafka",
    "worker",
    "queue",
    "retry",
    "timeout",
    "latency",
    "cache",
    "index",
    "vector",
    "memory",
    "session",
    "agent",
    "tenant",
    "review",
    "pull",
    "request",
    "test",
    "fixture",
    "pytest",
    "docker",
    "helm",
    "chart",
    "region",
    "cluster",
    "node",
    "budget",
    "token",
    "model",
    "prompt",
    "customer",
    "partner",
    "report",
    "dashboard",
    "alert",
    "metric",
    "incident",
    "outage",
    "fix",
    "patch",
    "release",
    "version",
    "python",
    "golang",
    "rust",
    "typescript",
    "frontend",
    "backend",
    "api",
    "endpoint",
    "webhook",
    "batch",
    "job",
    "cron",
    "schedule",
    "friday",
    "monday",
]


def _vocabulary(size: int = 6000, seed: int = 3) -> list[str]:
    """Domain words first (the frequent ones), then pronounceable pseudo-words: text follows Zipf's law,
    so a query mixes common and rare terms as real queries do."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    words = list(DOMAIN_WORDS)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


WORDS = _vocabulary()
_ZIPF = [1.0 / (rank + 1) for rank in range(len(WORDS))]

NAMES = [
    "Dana",
    "Priya",
    "Sam",
    "Lee",
    "Ana",
    "Ben",
    "Omar",
    "Yuki",
    "Lena",
    "Ravi",
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Falcon",
    "Atlas",
    "Orion",
]
PARTITIONS = 4


def _words(rng: random.Random, n: int) -> list[str]:
    return rng.choices(WORDS, weights=_ZIPF, k=n)


def _sentence(rng: random.Random) -> str:
    n = rng.randint(8, 24)
    words = [w if rng.random() > 0.12 else rng.choice(NAMES) for w in _words(rng, n)]
    return " ".join(words).capitalize() + "."


def generate(data_dir: Path, size: int, users: int, seed: int = 7) -> None:
    from altm.vectors import VectorPoint
    from altm.vectors.edge import EdgeVectorIndex
    from altm.wiring import open_embedding

    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    settings = Settings(data_dir=data_dir, partitions=PARTITIONS)
    shards = ShardSet(data_dir, PARTITIONS)
    emb = open_embedding(settings, {})  # the model recall will embed queries with (ALTM_EMBEDDER)
    if emb is None:
        sys.exit("latency.py's stores hold vectors: set ALTM_EMBEDDER=local or e5")
    index = EdgeVectorIndex(data_dir / "vectors", emb.collection, emb.dim)
    index.open()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    layers = ["L0"] * 6 + ["L2"] * 3 + ["L1"]
    kinds = {"L0": "message", "L1": "capsule", "L2": "fact"}
    cols = ", ".join(MEMORY_COLUMNS)
    marks = ", ".join("?" for _ in MEMORY_COLUMNS)
    batch = 20_000
    for start in range(0, size, batch):
        rows_by_part: dict[int, list[list[Any]]] = {}
        edges_by_part: dict[int, list[tuple[Any, ...]]] = {}
        points = []
        for i in range(start, min(size, start + batch)):
            user = f"user{i % users}"
            scope = Scope(
                tenant_id="bench", workspace_id="w", user_id=user, agent_id=f"agent{rng.randrange(2)}"
            )
            layer = rng.choice(layers)
            content = _sentence(rng)
            mid = derive_id("mem", "synthetic", str(i))
            row: dict[str, Any] = dict.fromkeys(MEMORY_COLUMNS)
            row.update(
                {
                    "memory_id": mid,
                    "tenant_id": scope.tenant_id,
                    "workspace_id": scope.workspace_id,
                    "user_id": scope.user_id,
                    "agent_id": scope.agent_id,
                    "session_id": f"s{rng.randrange(200)}",
                    "layer": layer,
                    "kind": kinds[layer],
                    "content": content,
                    "content_hash": content_hash(content),
                    "source_id": f"t{i}",
                    "role": "user",
                    "attributes": "{}",
                    "evidence": "[]",
                    "method": "verbatim",
                    "processor": "synthetic",
                    "valid_from": (t0 + timedelta(seconds=i)).isoformat(),
                    "recorded_at": t0.isoformat(),
                    "trust_status": "unverified",
                    "lc_state": "active",
                    "lc_weight": 1.0,
                    "lc_injected": 0,
                    "lc_cited": 0,
                    "lc_helpful": 0,
                    "lc_harmful": 0,
                    "lc_pinned": 0,
                    "lc_compression": 0,
                }
            )
            part = partition_for(scope.home, PARTITIONS)
            rows_by_part.setdefault(part, []).append([row[c] for c in MEMORY_COLUMNS])
            name = rng.choice(NAMES)
            node = derive_id("node", scope.path, "Entity", name.casefold())
            edges_by_part.setdefault(part, []).append(
                (
                    derive_id("edge", scope.path, "MENTIONS", mid, node),
                    scope.tenant_id,
                    scope.workspace_id,
                    scope.user_id,
                    scope.agent_id,
                    mid,
                    node,
                    "MENTIONS",
                    None,
                    1.0,
                    1.0,
                    1.0,
                    0,
                    "heuristic",
                    t0.isoformat(),
                    1,  # evidence_count: the memory itself, in graph_edge_evidence
                )
            )
            vec = nprng.standard_normal(emb.dim).astype(np.float32)
            vec /= np.linalg.norm(vec)
            points.append(
                VectorPoint(
                    mid,
                    vec.tolist(),
                    {
                        "tenant_id": scope.tenant_id,
                        "workspace_id": scope.workspace_id,
                        "user_id": scope.user_id,
                        "agent_id": scope.agent_id,
                        "session_id": row["session_id"],
                        "layer": layer,
                        "kind": row["kind"],
                        "trust_status": "unverified",
                        "content_hash": row["content_hash"],
                    },
                )
            )
        for part, rows in rows_by_part.items():
            conn = shards.get(part)._db
            conn.execute("BEGIN")
            conn.executemany(f"INSERT INTO memories ({cols}) VALUES ({marks})", rows)
            edges = edges_by_part.get(part, [])
            conn.executemany(
                "INSERT OR IGNORE INTO graph_edges (edge_id, tenant_id, workspace_id, user_id, agent_id, src_id, "
                "dst_id, edge_type, label, unit_weight, weight, confidence, rejected, method, recorded_at, "
                "evidence_count) VALUES (" + ",".join("?" * 16) + ")", edges)
            conn.executemany("INSERT OR IGNORE INTO graph_edge_evidence (edge_id, memory_id) VALUES (?, ?)",
                             [(e[0], e[5]) for e in edges])
            apply_pending(conn)  # the word and trigram indexes of the rows (a writer transaction does it)
            conn.execute("COMMIT")
        index.upsert(points)
        print(f"  generated {min(size, start + batch)}/{size}", flush=True)
    t = time.perf_counter()
    index.optimize()  # build HNSW, as `altm optimize` does in a deployment
    print(f"  vector index optimised in {time.perf_counter() - t:.0f} s", flush=True)
    index.close()
    shards.close()
    # a log with the topics, so the runtime can open the data dir
    from altm.wiring import open_embedded

    async def init() -> None:
        async with open_embedded(settings):
            pass

    asyncio.run(init())


def serve(data_dir: Path, queries: int, users: int) -> dict[str, Any]:
    from altm.wiring import open_embedded

    rng = random.Random(11)
    nonce = time.time_ns()
    settings = Settings(data_dir=data_dir, partitions=PARTITIONS)

    async def run() -> list[float]:
        out = []
        async with open_embedded(settings) as deployment:
            memory = deployment.app
            for q in range(queries + 10):
                scope = Scope(
                    tenant_id="bench", workspace_id="w", user_id=f"user{q % users}", agent_id="agent0"
                )
                text = " ".join(_words(rng, 6)) + "?"
                start = time.perf_counter()
                # a fresh turn id per run: a reused store must not answer from the cycles of an earlier run
                await memory.prepare_turn(scope, "s1", f"q{nonce}-{q}", text, 2000)
                if q >= 10:  # warm-up excluded
                    out.append((time.perf_counter() - start) * 1000)
        return out

    latencies = asyncio.run(run())
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
        "p99": percentile(latencies, 0.99),
        "peak_rss_mib": rss_mib,
        "latencies_ms": latencies,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--stores", type=Path,
                    help="Keep the generated stores under this directory (one per size) and reuse them next time")
    ap.add_argument("--phase", choices=["generate", "serve"], help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "generate":
        generate(args.dir, args.size, args.users)
        return
    if args.phase == "serve":
        sys.stdout.write(orjson.dumps(serve(args.dir, args.queries, args.users)).decode())
        return
    results = []
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory(prefix="altm-latency-") as tmp:
            d = (args.stores / f"size-{size}-users-{args.users}" if args.stores else Path(tmp)) / "data"
            t0 = time.perf_counter()
            if not (d.parent / "complete").exists():
                shutil.rmtree(d, ignore_errors=True)
                subprocess.run(
                    [sys.executable, __file__, "--phase", "generate", "--dir", str(d), "--size", str(size),
                     "--users", str(args.users)],
                    check=True, stdout=sys.stderr,
                )
                if args.stores:
                    (d.parent / "complete").write_text(str(size))
            gen_s = time.perf_counter() - t0
            out = subprocess.run(
                [sys.executable, __file__, "--phase", "serve", "--dir", str(d), "--queries", str(args.queries),
                 "--users", str(args.users)],
                check=True, capture_output=True, text=True,
            )
            r = orjson.loads(out.stdout.strip().splitlines()[-1])
        r.update({"size": size, "generate_s": gen_s, "per_user": size // args.users})
        results.append(r)
        print(
            f"{size:>9} units ({size // args.users} per user): prepare_turn p50 {r['p50']:.1f} ms, "
            f"p95 {r['p95']:.1f} ms, p99 {r['p99']:.1f} ms, peak RSS {r['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    if len(results) > 1:
        base = results[0]
        for r in results[1:]:
            print(f"  x{r['size'] / base['size']:.0f} units -> p95 x{r['p95'] / base['p95']:.2f}")
    path = write_record(
        "latency",
        {
            "config": config_stamp(
                benchmark="latency",
                preset="hybrid+graph",
                token_budget=2000,
                users=args.users,
                queries=args.queries,
                partitions=PARTITIONS,
            ),
            "aggregate": {
                str(r["size"]): {k: r[k] for k in ("p50", "p95", "p99", "peak_rss_mib")} for r in results
            },
            "runs": results,
        },
        args.out,
    )
    print(f"record: {path}")


if __name__ == "__main__":
    main()
