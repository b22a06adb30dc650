"""Guard recall on paraphrased re-assertions (issue 15, item 4), through the writer's real guard.

    python benchmarks/guard_paraphrase.py [--set dev|held-out|held-out-2|held-out-3|all] [--out FILE.json]

A labelled set (``benchmarks/guard_sets/``) holds anti-patterns, each with re-assertions in other words (to be
refused), negated statements and same-topic statements (to be admitted), and erased messages, each with
re-statements in other words (to be refused) and same-topic statements (to be admitted). All anti-patterns and
erasures of a set belong to one user, so a statement may be refused by any of them. Every statement is checked
as a derived memory by the writer's guard over a real shard, in three configurations:

* ``before``: the rules before this benchmark existed (containment or token overlap for anti-patterns,
  shingle overlap for erasures), computed with the guard's own functions;
* ``terms``: the guard without a text similarity (``ALTM_EMBEDDER=none``): canonical terms only;
* ``meaning``: the guard with the local MiniLM (the default): terms and meaning; a borderline match is flagged
  for review (stored ``uncertain``) rather than refused.

``dev.json`` was written by the developers and the rules were tuned on it; ``held_out.json`` was written
independently (by someone who did not see the guard's code) and measured once after the rules were fixed:
report its figures apart. Its failures have been read since (2026-12-06), so it is no longer blind.
``held_out_2.json`` was written blind on 2026-12-06 by a helper who saw neither the code nor the other sets,
from a one-paragraph specification (re-assertions in clearly different words, concrete instances of the
pattern), and measured once with the rules fixed. Its erasure failures were read on 2026-12-06 (an erased
address came back without its gate code), so its erasure half is no longer blind either.
``held_out_3.json`` was written blind on 2026-12-06 by another helper, from a specification that named kinds
of private content (addresses, phone numbers, health, salary, family, legal trouble, accounts, travel
dates, a child's school) and of anti-patterns beyond software; measured once with the rules of that day
fixed (the names rule included): report it apart, and do not tune on it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.models import shared_local_minilm
from altm.pipeline.writer import EmbeddingSimilarity, TextSimilarity
from altm.pipeline.writer.guard import keyed_shingles, matches, negates, restates
from benchmarks._guard import Decision, guard_bench
from benchmarks._record import config_stamp, write_record

SETS_DIR = Path(__file__).parent / "guard_sets"
SETS = {"dev": ["dev.json"], "held-out": ["held_out.json"], "held-out-2": ["held_out_2.json"],
        "held-out-3": ["held_out_3.json"], "all": ["dev.json", "held_out.json", "held_out_2.json", "held_out_3.json"]}
REFUSE = {"reassertions"}  # the labels whose statements must be refused; every other label must be admitted


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((SETS_DIR / name).read_bytes())
    return data


def statements(data: dict[str, Any]) -> list[dict[str, str]]:
    """Every labelled statement of a set: what it is about (anti-pattern or erasure), its label and text."""
    out = []
    for ap in data["anti_patterns"]:
        for label in ("reassertions", "negated", "same_topic_admit"):
            out += [{"about": "anti_pattern", "target": ap["pattern"], "label": label, "text": t} for t in ap[label]]
    for er in data["erasures"]:
        for label in ("reassertions", "same_topic_admit"):
            out += [{"about": "erasure", "target": er["erased"], "label": label, "text": t} for t in er[label]]
    return out


def before(data: dict[str, Any], text: str) -> Decision:
    """The rules before: containment or overlap ≥ 0.8 (not negated) for anti-patterns, shingles for erasures."""
    if not negates(text) and any(matches(text, ap["pattern"], 0.8) for ap in data["anti_patterns"]):
        return "refuse"
    key = b"bench"
    mine = keyed_shingles(key, text)
    for er in data["erasures"]:
        erased = keyed_shingles(key, er["erased"])
        if restates(mine, erased, 0.8, specific=True):
            return "refuse"
    return "admit"


def run_set(name: str, data: dict[str, Any], similarity: TextSimilarity) -> list[dict[str, Any]]:
    rows = []
    with (tempfile.TemporaryDirectory(prefix="altm-guard-") as work,
          guard_bench(Path(work) / "terms", None) as terms,
          guard_bench(Path(work) / "meaning", similarity) as meaning):
        for bench in (terms, meaning):
            for ap in data["anti_patterns"]:
                bench.add_anti_pattern(ap["pattern"], ap["why_bad"])
            for er in data["erasures"]:
                bench.erase(er["erased"])
        for s in statements(data):
            by_terms, _ = terms.decide(s["text"])
            by_meaning, why = meaning.decide(s["text"])
            rows.append({**s, "set": name, "before": before(data, s["text"]), "terms": by_terms,
                         "meaning": by_meaning, "why": why})
    return rows


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per configuration: refused and flagged among what must be refused and among what must be admitted."""
    out: dict[str, Any] = {}
    for config in ("before", "terms", "meaning"):
        per: dict[str, Any] = {}
        for about in ("anti_pattern", "erasure"):
            mine = [r for r in rows if r["about"] == about]
            must = [r for r in mine if r["label"] in REFUSE]
            may = [r for r in mine if r["label"] not in REFUSE]
            got = Counter(r[config] for r in must)
            wrong = Counter(r[config] for r in may)
            per[about] = {
                "reassertions": len(must), "refused": got["refuse"], "flagged": got["flag"],
                "recall": _ratio(got["refuse"], len(must)),
                "caught": _ratio(got["refuse"] + got["flag"], len(must)),
                "admits": len(may), "admits_refused": wrong["refuse"], "admits_flagged": wrong["flag"],
            }
        out[config] = per
    return out


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def report(name: str, agg: dict[str, Any]) -> None:
    print(f"\n{name}: refused (recall) / refused+flagged of re-assertions; refused / flagged of statements to admit")
    for config, per in agg.items():
        cells = []
        for about, f in per.items():
            cells.append(f"{about}: {f['refused']}/{f['reassertions']} ({f['recall']}) caught {f['caught']}, "
                         f"admits refused {f['admits_refused']}/{f['admits']} flagged {f['admits_flagged']}")
        print(f"  {config:8s} " + " | ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=sorted(SETS), default="all")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    similarity = EmbeddingSimilarity(shared_local_minilm())
    rows: list[dict[str, Any]] = []
    figures = {}
    for file in SETS[args.set]:
        name = file.removesuffix(".json")
        mine = run_set(name, load(file), similarity)
        figures[name] = aggregate(mine)
        report(name, figures[name])
        rows += mine
    misses = [r for r in rows if (r["label"] in REFUSE) != (r["meaning"] == "refuse")]
    for r in misses[:12]:
        print(f"  {r['set']} {r['label']:16s} {r['meaning']:6s} {r['text'][:90]!r}")
    path = write_record("guard_paraphrase", {
        "config": config_stamp(benchmark="guard_paraphrase", sets=SETS[args.set], embedder="local MiniLM int8"),
        "aggregate": figures, "rows": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
