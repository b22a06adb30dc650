"""Dense recall of each local embedder alone: LoCoMo turns embedded as memories, each question as recall's query,
the nearest turns by cosine, scored as ``locomo.py`` scores (Recall-any/all, fraction, nDCG, MRR).

    python benchmarks/dense_recall.py [--data LOCOMO.json] [--models local,e5] [--conversations conv-26]
        [--out FILE.json]

What the embedder alone is worth, without the word channels, priors and neighbours that ``locomo.py``'s presets
fuse with it; and its speed on the same texts (turns and questions, texts/s). ``e5`` needs the optional package
(``pip install 'altm[e5]'``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import EmbeddingModel, LocalE5Small, LocalMiniLM
from benchmarks._record import config_stamp, file_sha256, write_record
from benchmarks.locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    aggregate,
    conversation_turns,
    load_samples,
    normalise_gold,
    score_question,
)

MODELS = {"local": LocalMiniLM, "e5": LocalE5Small}


def run_model(model: EmbeddingModel, samples: list[dict[str, Any]], top_k: int) -> tuple[list[dict[str, Any]],
                                                                                          float, int]:
    records: list[dict[str, Any]] = []
    seconds, texts = 0.0, 0
    for sample in samples:
        turns = conversation_turns(sample)
        ids = [t.turn_id for t in turns]
        qa = [q for q in sample["qa"] if q.get("evidence")]
        start = time.perf_counter()
        memories = np.array(model.embed([t.content for t in turns]), dtype=np.float32)
        queries = [np.array(model.embed_query(str(q["question"])), dtype=np.float32) for q in qa]
        seconds += time.perf_counter() - start
        texts += len(turns) + len(qa)
        known = set(ids)
        for i, (q, vector) in enumerate(zip(qa, queries, strict=True)):
            order = np.argsort(-(memories @ vector))[:top_k]
            ranked = [[ids[j]] for j in order]
            gold = [g for g in normalise_gold(q["evidence"]) if g in known]
            records.append({"conversation": sample["sample_id"], "index": i, "category": q["category"],
                            "gold_ids": gold, "ranked_source_ids": ranked, "latency_ms": 0.0,
                            "metrics": score_question(gold, ranked)})
    return records, seconds, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--models", default="local,e5", help="Comma-separated among: local (MiniLM), e5")
    ap.add_argument("--conversations", help="Comma-separated sample ids (default: all)")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {unknown}; choose among {sorted(MODELS)}")
    samples = load_samples(args.data, args.conversations)
    results: dict[str, Any] = {}
    for name in names:
        model = MODELS[name]()
        records, seconds, texts = run_model(model, samples, args.top_k)
        agg = {k: v for k, v in aggregate(records).items() if not k.startswith("latency")}
        by_cat = {f"cat {c} {CATEGORIES.get(c, '?')}": aggregate([r for r in records if r["category"] == c])
                  ["recall_any@10"] for c in sorted({r["category"] for r in records})}
        results[name] = {"model_id": model.model_id, "aggregate": agg, "recall_any@10_by_category": by_cat,
                         "texts": texts, "seconds": seconds, "texts_per_s": texts / seconds if seconds else 0.0,
                         "questions": records}
        print(f"{name:6} ({model.model_id}): {len(records)} questions, recall_any@5 {agg['recall_any@5']:.3f}, "
              f"@10 {agg['recall_any@10']:.3f}, mrr {agg['mrr']:.3f}; {texts} texts in {seconds:.1f} s "
              f"({texts / seconds:.1f} texts/s)", flush=True)
    path = write_record("dense_recall", {
        "config": config_stamp(benchmark="dense_recall", models=names, top_k=args.top_k, dataset=str(args.data),
                               dataset_sha256=file_sha256(args.data), conversations=[s["sample_id"] for s in samples]),
        "aggregate": {n: r["aggregate"] for n, r in results.items()},
        "models": results,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
