"""What the local embedder's meaning alone can tell of anti-pattern re-assertions (issue 15, item 4).

    python benchmarks/guard_meaning.py [--data LOCOMO.json] [--out FILE.json]

For each labelled guard set (``benchmarks/guard_sets/``), the cosine of each anti-pattern with its re-assertions
(to be refused), its negated statements and its same-topic statements (to be admitted), from the local MiniLM;
and the cosine of each of the 8,265 LoCoMo dev sentences of ``guard_fp.py`` with that benchmark's 16
anti-patterns. For a grid of thresholds it prints the share of each label a rule "refuse at cosine >= t" would
refuse, and the LoCoMo sentences it would refuse (false positives). No tuning: this measures the embedder's
separation, so the guard's design can be judged against the issue's goal (recall >= 0.9 on paraphrases, 0 false
positives). The record has the config stamp, the figures and one row per labelled statement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import shared_local_minilm
from benchmarks._record import config_stamp, median, write_record
from benchmarks.guard_fp import ANTI_PATTERNS, conversation_sentences
from benchmarks.guard_paraphrase import SETS, load
from benchmarks.ingest import DEFAULT_DATA

THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.85)
LABELS = ("reassertions", "negated", "same_topic_admit")
Vectors = npt.NDArray[np.float32]


def embed(texts: list[str]) -> Vectors:
    model = shared_local_minilm()
    out: list[list[float]] = []
    for i in range(0, len(texts), 64):
        out += model.embed(texts[i:i + 64])
    return np.asarray(out, dtype=np.float32)


def set_rows(name: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per labelled statement about an anti-pattern: its cosine with that pattern."""
    rows: list[dict[str, Any]] = []
    for ap in data["anti_patterns"]:
        texts = [t for label in LABELS for t in ap[label]]
        labels = [label for label in LABELS for _ in ap[label]]
        vectors = embed([ap["pattern"], *texts])
        cosines = vectors[1:] @ vectors[0]
        rows += [{"set": name, "pattern": ap["pattern"], "label": label, "text": text,
                  "cosine": round(float(c), 4)} for label, text, c in zip(labels, texts, cosines, strict=True)]
    return rows


def shares(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per label, the share a rule "refuse at cosine >= t" refuses, for each t."""
    out: dict[str, dict[str, float]] = {}
    for label in LABELS:
        cosines = [r["cosine"] for r in rows if r["label"] == label]
        out[label] = {f"{t:.2f}": round(sum(c >= t for c in cosines) / len(cosines), 3) for t in THRESHOLDS}
        out[label]["median"] = round(median(cosines), 3)
    return out


def locomo(data: Path) -> dict[str, Any]:
    """LoCoMo dev sentences refused at each t against guard_fp's anti-patterns, and the closest pair."""
    sentences = conversation_sentences(data)
    cosines = embed(sentences) @ embed(ANTI_PATTERNS).T
    best = cosines.max(axis=1)
    i, j = np.unravel_index(int(cosines.argmax()), cosines.shape)
    software = cosines[:, :10].max(axis=1)  # the first ten patterns are far from the conversations' topics
    return {"sentences": len(sentences),
            "refused": {f"{t:.2f}": int((best >= t).sum()) for t in THRESHOLDS},
            "refused_software_patterns_only": {f"{t:.2f}": int((software >= t).sum()) for t in THRESHOLDS},
            "closest": {"cosine": round(float(cosines[i, j]), 4), "pattern": ANTI_PATTERNS[j],
                        "sentence": sentences[i]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    per_set: dict[str, Any] = {}
    for name, files in SETS.items():
        if name == "all":
            continue
        mine = set_rows(name, load(files[0]))
        per_set[name] = shares(mine)
        rows += mine
    fp = locomo(args.data)
    header = "  ".join(f"{t:>5.2f}" for t in THRESHOLDS)
    print(f"share refused by 'cosine >= t' (local MiniLM)    t: {header}   median")
    for name, figures in per_set.items():
        for label in LABELS:
            cells = "  ".join(f"{figures[label][f'{t:.2f}']:5.2f}" for t in THRESHOLDS)
            print(f"{name:>11} {label:<18}                {cells}   {figures[label]['median']:.2f}")
    cells = "  ".join(f"{fp['refused'][f'{t:.2f}']:5d}" for t in THRESHOLDS)
    print(f"LoCoMo sentences refused (of {fp['sentences']}), 16 patterns {cells}")
    cells = "  ".join(f"{fp['refused_software_patterns_only'][f'{t:.2f}']:5d}" for t in THRESHOLDS)
    print(f"  the 10 software patterns only                    {cells}")
    print(f"closest pair: {fp['closest']['cosine']:.3f} {fp['closest']['pattern']!r} | {fp['closest']['sentence']!r}")
    path = write_record("guard_meaning", {
        "config": config_stamp(benchmark="guard_meaning", embedder="local MiniLM int8", thresholds=THRESHOLDS,
                               anti_patterns=ANTI_PATTERNS),
        "aggregate": {"sets": per_set, "locomo": fp}, "rows": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
