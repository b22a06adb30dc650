"""False-positive rate of the write guard on ordinary conversation text.

    python benchmarks/guard_fp.py [--data LOCOMO.json] [--embedder local|none] [--out FILE.json]

Every sentence of the LoCoMo dev conversations is checked, as a derived memory would be, by the writer's guard
over a real shard holding anti-patterns and erased messages that have nothing to do with those conversations;
any refusal is a false positive, and a flag (stored ``uncertain`` for review) is counted apart as review load.
A control set of re-assertions (which must be refused) checks that the guard still works.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import shared_local_minilm
from altm.pipeline.processors import _rules as rules
from altm.pipeline.writer import EmbeddingSimilarity
from benchmarks._guard import GuardBench, guard_bench
from benchmarks._progress import progress
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA

ANTI_PATTERNS = [
    "run the refund batch in one big transaction",
    "store session tokens in localStorage",
    "edit migrations after they are merged",
    "deploy on Fridays without a rollback plan",
    "mock the database in integration tests",
    "force-push to the main branch",
    "catch every exception and ignore it",
    "commit secrets to the repository",
    "use floats for money amounts",
    "skip code review for hotfixes",
    # near the conversations' own topics, to make false positives possible
    "go camping without checking the weather forecast",
    "skip stretching before running",
    "adopt a pet without visiting the shelter first",
    "paint with oil colors indoors without ventilation",
    "sign up for a pottery class without trying one first",
    "take the kids hiking without enough water",
]
TOMBSTONES = [
    "My passport number is X1234567 and I keep it in the blue drawer.",
    "The door code for the office is 4471.",
    "My bank PIN is 9921.",
]
REASSERTIONS = [
    "Let's run the refund batch in one big transaction again.",
    "We can store session tokens in localStorage for now.",
    "I'll just edit migrations after they are merged, it's faster.",
    "The team agreed to deploy on Fridays without a rollback plan.",
    "Use floats for money amounts in the invoice service.",
    "the door code for the office is 4471",
]


def conversation_sentences(data: Path) -> list[str]:
    sentences: list[str] = []
    for sample in orjson.loads(data.read_bytes()):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            for turn in conv[f"session_{n}"]:
                sentences += rules.sentences(str(turn["text"]))
            n += 1
    return sentences


def check_all(bench: GuardBench, sentences: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(refused, flagged) sentences, each with the guard's reason."""
    refused: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] = []
    with progress("sentences", len(sentences)) as advance:
        for s in sentences:
            decision, why = bench.decide(s)
            if decision != "admit":
                (refused if decision == "refuse" else flagged).append({"sentence": s, "matched": why})
            advance(1)
    return refused, flagged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", choices=["local", "none"], default="local",
                    help="local: the guard judges meaning too (the default deployment); none: terms only")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"no conversation data at {args.data}")
    sentences = conversation_sentences(args.data)
    similarity = EmbeddingSimilarity(shared_local_minilm()) if args.embedder == "local" else None
    with tempfile.TemporaryDirectory(prefix="altm-guard-fp-") as work, guard_bench(Path(work), similarity) as bench:
        for pattern in ANTI_PATTERNS:
            bench.add_anti_pattern(pattern, "bench")
        for text in TOMBSTONES:
            bench.erase(text)
        false_positives, flagged = check_all(bench, sentences)
        caught = [s for s in REASSERTIONS if bench.decide(s)[0] == "refuse"]
    rate = len(false_positives) / len(sentences)
    print(f"{len(sentences)} ordinary sentences (embedder {args.embedder}): {len(false_positives)} refused -> "
          f"false-positive rate {rate:.4%}; {len(flagged)} flagged for review ({len(flagged) / len(sentences):.4%})")
    print(f"re-assertions refused: {len(caught)}/{len(REASSERTIONS)}")
    for fp in false_positives[:10]:
        print(f"  FP: {fp['sentence'][:90]!r} ({fp['matched']})")
    for fl in flagged[:10]:
        print(f"  flagged: {fl['sentence'][:90]!r} ({fl['matched'][:80]})")
    path = write_record("guard_fp", {
        "config": config_stamp(benchmark="guard_fp", embedder=args.embedder, dataset=str(args.data),
                               anti_patterns=ANTI_PATTERNS, tombstones=TOMBSTONES),
        "aggregate": {"sentences": len(sentences), "false_positives": len(false_positives),
                      "false_positive_rate": rate, "flagged": len(flagged),
                      "reassertions_refused": len(caught), "reassertions": len(REASSERTIONS)},
        "false_positives": false_positives, "flagged": flagged,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
