"""LoCoMo retrieval, cross-validated over the constants of the search preset (issue 15's protocol).

    python benchmarks/locomo_cv.py [--data LOCOMO.json] [--preset conversation] [--out FILE.json] \
        [--conversations conv-26,conv-30] [--limit-questions N] [--passes 2]

``locomo.py --select-among`` chooses among whole presets, and the constants *inside* the shipped preset (the
session prior's weight, the time prior's, the neighbours', the vector channel's, the candidate count, ...)
were tuned on every dev conversation: its cross-validated figure says nothing about them. Here each fold
holds one conversation out, tunes those constants on the others by coordinate ascent over the grid ``AXES``
(from the shipped preset, one constant at a time, keeping a change only when it raises the mean
Recall-any@10 of the training questions), and scores the held-out conversation with what it chose. The
cross-validated figure is the held-out questions pooled over every fold; beside it, the shipped preset's
in-sample figure and what the same ascent chooses on all conversations (the in-sample optimum, an upper
bound that no held-out conversation checked).

Each conversation is ingested once through the full pipeline (as in ``locomo.py``); every configuration is
scored on it by the service's retriever, each (configuration, conversation) once. The record holds the
configuration each fold chose, its training and held-out figures, and one row per held-out question with its
ranked source ids, so every aggregate can be recomputed from it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.recall.retrieval import PRESETS, SearchConfig
from benchmarks._progress import progress
from benchmarks._record import config_stamp, file_sha256, write_record
from benchmarks.locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    IngestedConversation,
    aggregate,
    embedder_stamp,
    ingested_conversation,
    load_samples,
    normalise_gold,
    score_question,
)

Choice = tuple[tuple[str, float], ...]
"""A point of the grid: (axis, value) for every axis, in ``AXES`` order (hashable: the score cache's key)."""

AXES: dict[str, tuple[float, ...]] = {
    "session_prior": (0.0, 0.15, 0.3, 0.6),
    "time_prior": (0.0, 0.2, 0.4, 0.8),
    "neighbour_weight": (0.0, 0.15, 0.3, 0.6),
    "vector_weight": (0.25, 0.5, 1.0),
    "candidates": (50, 100, 200),
    "neighbour_seeds": (1, 3, 5),
    "session_prior_top": (1, 3, 5),
    "time_lookback_days": (7, 14, 30),
    "question_factor": (1.0, 0.8, 0.6, 0.4),
}
"""The preset's tuned constants and the values each fold may choose among (the shipped value is among them)."""
OBJECTIVE = "recall_any@10"


def choice_of(config: SearchConfig) -> Choice:
    """Where ``config`` lies on the grid's axes (its own values, which need not be grid values)."""
    weights = config.channel_weights
    values = {
        "session_prior": config.session_prior, "time_prior": config.time_prior,
        "neighbour_weight": weights.get("neighbours", 0.0) if config.neighbour_seeds else 0.0,
        "vector_weight": weights.get("vector", 1.0), "candidates": float(config.candidates),
        "neighbour_seeds": float(config.neighbour_seeds), "session_prior_top": float(config.session_prior_top),
        "time_lookback_days": float(config.time_lookback_days), "question_factor": config.question_factor,
    }
    return tuple((axis, float(values[axis])) for axis in AXES)


def config_at(base: SearchConfig, choice: Choice) -> SearchConfig:
    """``base`` with the constants of ``choice`` (a neighbour weight of 0 turns the neighbours channel off)."""
    c = dict(choice)
    weights = {**base.channel_weights, "vector": c["vector_weight"], "neighbours": c["neighbour_weight"]}
    return base.model_copy(update={
        "session_prior": c["session_prior"], "time_prior": c["time_prior"], "channel_weights": weights,
        "candidates": int(c["candidates"]),
        "neighbour_seeds": int(c["neighbour_seeds"]) if c["neighbour_weight"] > 0 else 0,
        "session_prior_top": int(c["session_prior_top"]), "time_lookback_days": int(c["time_lookback_days"]),
        "question_factor": c["question_factor"],
    })


def with_value(choice: Choice, axis: str, value: float) -> Choice:
    return tuple((a, value if a == axis else v) for a, v in choice)


def coordinate_ascent(score: Callable[[Choice], float], start: Choice,
                      axes: Mapping[str, Sequence[float]] = AXES, passes: int = 2) -> tuple[Choice, float]:
    """From ``start``, one axis at a time (in ``axes`` order), the value with the highest ``score``; a change
    is kept only when it raises the score (a tie keeps the current value). Up to ``passes`` rounds over the
    axes, fewer when a round changes nothing. Returns the choice and its score."""
    best, best_score = start, score(start)
    for _ in range(passes):
        changed = False
        for axis, values in axes.items():
            for value in values:
                candidate = with_value(best, axis, float(value))
                if candidate == best:
                    continue
                s = score(candidate)
                if s > best_score:
                    best, best_score, changed = candidate, s, True
        if not changed:
            break
    return best, best_score


@dataclass(frozen=True)
class Question:
    conversation: str
    index: int
    text: str
    category: int
    gold: list[str]


Searcher = Callable[[str, SearchConfig, Question], list[list[str]]]
"""The ranked source ids of each memory found for a question of a conversation, under a configuration."""


class GridScores:
    """Per-question metrics of each (choice, conversation), computed once (``search`` does the work)."""

    def __init__(self, base: SearchConfig, questions: Mapping[str, Sequence[Question]], search: Searcher,
                 advance: Callable[[int], None] | None = None) -> None:
        self.base = base
        self.questions = questions
        self.search = search
        self.advance = advance
        self.rows: dict[tuple[Choice, str], list[dict[str, Any]]] = {}
        self.search_s = 0.0

    def of(self, choice: Choice, conversation: str) -> list[dict[str, Any]]:
        key = (choice, conversation)
        if key not in self.rows:
            config = config_at(self.base, choice)
            rows = []
            for q in self.questions[conversation]:
                start = time.perf_counter()
                ranked = self.search(conversation, config, q)
                latency = (time.perf_counter() - start) * 1000
                self.search_s += latency / 1000
                rows.append({"conversation": conversation, "index": q.index, "question": q.text,
                             "category": q.category, "gold_ids": q.gold, "ranked_source_ids": ranked,
                             "latency_ms": latency, "metrics": score_question(q.gold, ranked)})
            if self.advance is not None:
                self.advance(len(rows))
            self.rows[key] = rows
        return self.rows[key]

    def objective(self, conversations: Sequence[str]) -> Callable[[Choice], float]:
        """What a fold maximises: the mean ``OBJECTIVE`` over the questions of its training conversations."""
        train = list(conversations)
        return lambda choice: self.mean(choice, train)

    def mean(self, choice: Choice, conversations: Sequence[str], metric: str = OBJECTIVE) -> float:
        """The metric's mean over the questions of ``conversations`` (pooled: each question weighs the same)."""
        rows = [r for c in conversations for r in self.of(choice, c)]
        return float(sum(r["metrics"][metric] for r in rows)) / max(1, len(rows))


def nested_cv(grid: GridScores, conversations: Sequence[str], start: Choice, passes: int = 2) -> dict[str, Any]:
    """Leave one conversation out: tune on the others, score the one left out; pooled over the folds."""
    folds, held_out = [], []
    for conv in conversations:
        train = [c for c in conversations if c != conv]
        chosen, train_score = coordinate_ascent(grid.objective(train), start, passes=passes)
        rows = grid.of(chosen, conv)
        held_out += rows
        folds.append({"held_out": conv, "chosen": dict(chosen), "train_" + OBJECTIVE: train_score,
                      "held_out_aggregate": aggregate(rows),
                      "changed_from_shipped": {a: v for a, v in chosen if dict(start)[a] != v}})
    optimum, optimum_score = coordinate_ascent(grid.objective(conversations), start, passes=passes)
    shipped = [r for c in conversations for r in grid.of(start, c)]
    return {
        "cross_validated": aggregate(held_out),
        "cross_validated_by_category": by_category(held_out),
        "shipped_in_sample": aggregate(shipped),
        "shipped_in_sample_by_category": by_category(shipped),
        "in_sample_optimum": {"chosen": dict(optimum), OBJECTIVE: optimum_score,
                              "aggregate": aggregate([r for c in conversations for r in grid.of(optimum, c)])},
        "folds": folds,
        "held_out_questions": held_out,
    }


def by_category(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {f"cat {c} {CATEGORIES.get(c, '?')}": aggregate([r for r in rows if r["category"] == c])
            for c in sorted({r["category"] for r in rows})}


def questions_of(sample: dict[str, Any], known: set[str], limit: int | None) -> list[Question]:
    """The questions with evidence, scored on their matchable gold ids (as ``locomo.py``'s reported row)."""
    qa = [q for q in sample["qa"] if q.get("evidence")]
    return [Question(sample["sample_id"], i, str(q["question"]), int(q["category"]),
                     [g for g in normalise_gold(q["evidence"]) if g in known])
            for i, q in enumerate(qa[:limit] if limit else qa)]


def print_report(result: dict[str, Any]) -> None:
    keys = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@10", "ndcg@10", "mrr")
    print(f"{'':>46} " + " ".join(f"{k:>13}" for k in keys))
    for name, row in (("shipped preset, in-sample", result["shipped_in_sample"]),
                      ("in-sample optimum of the grid", result["in_sample_optimum"]["aggregate"]),
                      ("leave-one-conversation-out (cross-validated)", result["cross_validated"])):
        print(f"{name:>46} " + " ".join(f"{row[k]:>13.3f}" for k in keys))
    for fold in result["folds"]:
        agg = fold["held_out_aggregate"]
        print(f"fold {fold['held_out']}: train {OBJECTIVE} {fold['train_' + OBJECTIVE]:.3f}, held out "
              f"R@5 {agg['recall_any@5']:.3f} R@10 {agg['recall_any@10']:.3f}; changed from the preset: "
              f"{fold['changed_from_shipped'] or 'nothing'}")
    print(f"in-sample optimum changes: "
          f"{ {a: v for a, v in result['in_sample_optimum']['chosen'].items() if result['shipped'][a] != v} }")


async def run(samples: Sequence[dict[str, Any]], preset_name: str, limit: int | None, passes: int,
              work: Path) -> dict[str, Any]:
    base = PRESETS[preset_name]
    async with contextlib.AsyncExitStack() as stack:
        ingested: dict[str, IngestedConversation] = {}
        for sample in samples:
            conv = await stack.enter_async_context(ingested_conversation(sample, work))
            ingested[sample["sample_id"]] = conv
            print(f"{sample['sample_id']}: {len(conv.turns)} turns ingested in {conv.ingest_s:.1f} s", flush=True)
        questions = {sid: questions_of(s, {t.turn_id for t in ingested[sid].turns}, limit)
                     for sid, s in zip(ingested, samples, strict=True)}

        def search(conversation: str, config: SearchConfig, q: Question) -> list[list[str]]:
            c = ingested[conversation]
            result = c.app.recall.retriever.search(c.scope, "bench", q.text, config)
            return [h.source_ids for h in result.hits]

        start = choice_of(base)
        with progress("searches", None) as advance:
            grid = GridScores(base, questions, search, advance)
            t0 = time.perf_counter()
            result = nested_cv(grid, list(ingested), start, passes=passes)
        result["shipped"] = dict(start)
        result["grid"] = {"configurations_scored": len({ch for ch, _ in grid.rows}),
                          "searches": sum(len(r) for r in grid.rows.values()), "search_s": grid.search_s,
                          "seconds": time.perf_counter() - t0}
        result["ingest"] = {sid: c.stats() for sid, c in ingested.items()}
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--preset", default="conversation", choices=sorted(PRESETS))
    ap.add_argument("--conversations", help="Comma-separated sample ids (default: all); at least two")
    ap.add_argument("--limit-questions", type=int, help="Per conversation, for quick runs")
    ap.add_argument("--passes", type=int, default=2, help="Rounds of coordinate ascent over the axes")
    args = ap.parse_args()
    samples = load_samples(args.data, args.conversations)
    if len(samples) < 2:
        sys.exit("locomo_cv: leave-one-conversation-out needs at least two conversations")
    with tempfile.TemporaryDirectory(prefix="altm-locomo-cv-") as tmp:
        result = asyncio.run(run(samples, args.preset, args.limit_questions, args.passes, Path(tmp)))
    print_report(result)
    out = {
        "config": config_stamp(benchmark="locomo_cv", preset=args.preset, search=PRESETS[args.preset].model_dump(),
                               axes={a: list(v) for a, v in AXES.items()}, objective=OBJECTIVE,
                               passes=args.passes, embedder=embedder_stamp(), model=None,
                               dataset=str(args.data), dataset_sha256=file_sha256(args.data),
                               conversations=[s["sample_id"] for s in samples],
                               limit_questions=args.limit_questions),
        "aggregate": result["cross_validated"],
        **result,
    }
    path = write_record("locomo_cv", out, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
