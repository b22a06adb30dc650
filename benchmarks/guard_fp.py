"""False-positive rate of the write guard on ordinary conversation text.

    python benchmarks/guard_fp.py [--data LOCOMO.json] [--threshold 0.8] [--out FILE.json]

Every sentence of the LoCoMo dev conversations is checked, as a derived memory would be, against a set of
anti-patterns and tombstones that have nothing to do with those conversations; any refusal is a false
positive. A control set of re-assertions (which must be refused) checks that the guard still works.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.pipeline.processors import _rules as rules
from altm.pipeline.writer.guard import matches, negates
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


def refused(sentence: str, threshold: float) -> str | None:
    """The guard's own decision rules (the writer applies them to stored anti-patterns and tombstones)."""
    for p in ANTI_PATTERNS:
        if not negates(sentence) and matches(sentence, p, threshold):
            return f"anti-pattern: {p}"
    for t in TOMBSTONES:
        if matches(sentence, t, threshold):
            return f"tombstone: {t}"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"no conversation data at {args.data}")
    sentences: list[str] = []
    for sample in orjson.loads(args.data.read_bytes()):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            for turn in conv[f"session_{n}"]:
                sentences += rules.sentences(str(turn["text"]))
            n += 1
    false_positives: list[dict[str, Any]] = []
    for s in sentences:
        why = refused(s, args.threshold)
        if why:
            false_positives.append({"sentence": s, "matched": why})
    caught = [s for s in REASSERTIONS if refused(s, args.threshold)]
    rate = len(false_positives) / len(sentences)
    print(f"{len(sentences)} ordinary sentences: {len(false_positives)} refused -> false-positive rate "
          f"{rate:.4%} at threshold {args.threshold}")
    print(f"re-assertions refused: {len(caught)}/{len(REASSERTIONS)}")
    for fp in false_positives[:10]:
        print(f"  FP: {fp['sentence'][:90]!r} ({fp['matched']})")
    path = write_record("guard_fp", {
        "config": config_stamp(benchmark="guard_fp", threshold=args.threshold, dataset=str(args.data),
                               anti_patterns=ANTI_PATTERNS, tombstones=TOMBSTONES),
        "aggregate": {"sentences": len(sentences), "false_positives": len(false_positives),
                      "false_positive_rate": rate, "reassertions_refused": len(caught),
                      "reassertions": len(REASSERTIONS)},
        "false_positives": false_positives,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
