"""LoCoMo retrieval benchmark: one isolated store per conversation, the full pipeline, the service's recall.

    python benchmarks/locomo.py --data ../shared/benchmarks/locomo-dev/locomo-dev.json --out FILE.json \
        [--preset conversation] [--conversations conv-26,conv-30] [--limit-questions N] \
        [--select-among conversation,hybrid,hybrid+graph,lexical,vector]

Scoring follows ../shared/benchmarks/README.md: every turn is an L0 message whose source id is its dia_id and
whose timestamp is its session's date; every QA item with evidence is a query whose gold ids are the
evidence dia_ids (malformed ones such as "D8:6; D9:17" are split and normalised; what still does not match a
turn is reported as unmatched, and the question is kept). Metrics are computed over the top-K *memories*
returned: a memory hits the gold ids it stands for (an L0 turn its own dia_id, a derived memory the turns it
cites as evidence), each gold id counted once. The output JSON holds the aggregate, per-category figures, a
config stamp and a per-question record from which every aggregate can be recomputed (``recompute``).

The evaluation protocol (issue 15): Recall-any, Recall-all and the mean fraction of gold ids found at K = 1, 5,
10, nDCG@10 and MRR, overall and per named category; a session-level view (a hit is a memory from a gold
evidence session) for comparison with systems that only report sessions; the questions whose gold ids name
no turn, with a *raw* row (scored against every gold id, unmatchable ones included) and an *audit-corrected*
row (matchable ids only, questions with none left out) beside the reported one. ``--select-among`` adds
leave-one-conversation-out selection: for each conversation, the preset with the best Recall-any@10 on the
*other* conversations is scored on it; the cross-validated figure is reported beside the in-sample best.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.app import MemoryApp
from altm.core import Role, Scope, TurnEvent
from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask
from altm.models._e5 import E5_MODEL_ID
from altm.models._local import MINILM_MODEL_ID
from altm.recall.retrieval import PRESETS
from altm.wiring import Deployment, open_deployment
from benchmarks._progress import progress
from benchmarks._record import config_stamp, file_sha256, percentile, write_record

KS = (1, 5, 10)
_DIA = re.compile(r"D\d+:\d+")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "locomo-dev" / "locomo-dev.json"


def embedder_stamp() -> str:
    """The embedder the run's pipeline and recall use (``ALTM_EMBEDDER``, and MiniLM's weights setting, on which
    the latency depends), for the record's config stamp."""
    settings = Settings()
    return {"local": f"{MINILM_MODEL_ID} (local, weights {settings.embedder_weights})",
            "e5": f"{E5_MODEL_ID} (local)"}.get(settings.embedder, "none")


def load_samples(path: Path, conversations: str | None = None) -> list[dict[str, Any]]:
    """The LoCoMo samples of a data file; only those named when ``conversations`` (comma-separated ids) is
    given. Exits with a one-line message when the file or a named conversation is not there."""
    if not path.exists():
        sys.exit(f"no LoCoMo data at {path} (pass --data PATH)")
    samples: list[dict[str, Any]] = orjson.loads(path.read_bytes())
    if conversations:
        wanted = {c for c in conversations.split(",") if c}
        missing = sorted(wanted - {s["sample_id"] for s in samples})
        if missing:
            sys.exit(f"no conversation {', '.join(missing)} in {path}")
        samples = [s for s in samples if s["sample_id"] in wanted]
    return samples


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_gold(evidence: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def conversation_turns(sample: dict[str, Any], speaker_prefix: bool = True) -> list[TurnEvent]:
    conv = sample["conversation"]
    scope = Scope(tenant_id="locomo", workspace_id=sample["sample_id"], user_id="user", agent_id="agent")
    turns: list[TurnEvent] = []
    n = 1
    while f"session_{n}" in conv:
        start = parse_session_date(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}" if speaker_prefix else str(turn["text"])
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append(TurnEvent(scope=scope, session_id=f"session_{n}", turn_id=turn["dia_id"],
                                   source_id=turn["dia_id"], role=Role.USER, content=text,
                                   metadata={"speaker": turn["speaker"]},
                                   timestamp=start + timedelta(seconds=30 * i)))
        n += 1
    return turns


def score_question(gold: list[str], ranked: list[list[str]]) -> dict[str, Any]:
    """Metrics of one question from the source ids of its ranked memories."""
    gold_set = set(gold)
    covered: set[str] = set()
    gains: list[int] = []
    first_hit: int | None = None
    for rank, sources in enumerate(ranked, start=1):
        new = (set(sources) & gold_set) - covered
        gains.append(len(new))
        covered |= new
        if new and first_hit is None:
            first_hit = rank
    out: dict[str, Any] = {}
    for k in KS:
        hit_ids = set().union(*[set(s) for s in ranked[:k]]) & gold_set if ranked else set()
        out[f"recall_any@{k}"] = 1.0 if hit_ids else 0.0
        out[f"recall_all@{k}"] = 1.0 if gold_set and hit_ids == gold_set else 0.0
        out[f"fraction@{k}"] = len(hit_ids) / len(gold_set) if gold_set else 0.0
    dcg = sum(g / math.log2(r + 1) for r, g in enumerate(gains[:10], start=1))
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(gold_set), 10) + 1))
    out["ndcg@10"] = dcg / ideal if ideal else 0.0
    out["mrr"] = 1.0 / first_hit if first_hit else 0.0
    return out


AGG_KEYS = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@1", "recall_all@5", "recall_all@10",
            "fraction@1", "fraction@5", "fraction@10", "ndcg@10", "mrr")
SESSION_KEYS = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@10")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
"""LoCoMo's category numbers, named as in the dataset's paper."""


def session_of(dia_id: str) -> str:
    """``D3:5`` → ``D3``: the session a dialogue id belongs to."""
    return dia_id.split(":", 1)[0]


def session_metrics(gold: list[str], ranked: list[list[str]]) -> dict[str, Any]:
    """The same question scored on sessions: a memory hits the gold evidence sessions its sources are in."""
    sessions = sorted({session_of(g) for g in gold})
    full = score_question(sessions, [sorted({session_of(x) for x in sources}) for sources in ranked])
    return {k: full[k] for k in SESSION_KEYS}


def aggregate(records: Sequence[dict[str, Any]], keys: Sequence[str] = AGG_KEYS,
              field: str = "metrics") -> dict[str, Any]:
    n = len(records)
    agg: dict[str, Any] = {k: (sum(r[field][k] for r in records) / n if n else 0.0) for k in keys}
    lat = [r["latency_ms"] for r in records]
    agg["latency_ms_p50"] = percentile(lat, 0.50)
    agg["latency_ms_p95"] = percentile(lat, 0.95)
    agg["questions"] = n
    return agg


def recompute(record: dict[str, Any]) -> dict[str, Any]:
    """Aggregates recomputed from the per-question records of an output file (used by the tests)."""
    per = [{**q, "metrics": score_question(q["gold_ids"], q["ranked_source_ids"])}
           for q in record["questions"]]
    return aggregate(per)


@dataclass
class IngestedConversation:
    """One LoCoMo conversation ingested through the full pipeline into a store of its own."""

    deployment: Deployment
    turns: list[TurnEvent]
    ingest_s: float

    @property
    def app(self) -> MemoryApp:
        return self.deployment.app

    @property
    def scope(self) -> Scope:
        return self.turns[0].scope

    def stats(self) -> dict[str, Any]:
        return {"turns": len(self.turns), "ingest_s": self.ingest_s,
                "turns_per_s": len(self.turns) / self.ingest_s if self.ingest_s else 0.0}


@asynccontextmanager
async def ingested_conversation(sample: dict[str, Any], work: Path,
                                llm_settings: dict[ModelTask, LLMSettings] | None = None,
                                ) -> AsyncIterator[IngestedConversation]:
    """Every turn published and processed until the pipeline is idle, in an isolated store under ``work``
    (removed afterwards). ``llm_settings``: the pipeline's models per task; None reads ``ALTM_<TASK>_LLM_*``."""
    data_dir = work / sample["sample_id"]
    turns = conversation_turns(sample)
    deployment = await open_deployment(Settings(data_dir=data_dir, partitions=1), pipeline=True,
                                       llm_settings=llm_settings)
    try:
        await deployment.start()
        runtime = deployment.runtime
        assert runtime is not None
        t0 = time.perf_counter()
        await runtime.publish(turns)
        await runtime.run_until_idle()
        yield IngestedConversation(deployment, turns, time.perf_counter() - t0)
    finally:
        await deployment.close()
        shutil.rmtree(data_dir, ignore_errors=True)


async def run_conversation(sample: dict[str, Any], preset_name: str, top_k: int, limit: int | None,
                           work: Path, others: Sequence[str] = (), advance: Callable[[int], None] | None = None,
                           ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async with ingested_conversation(sample, work) as conversation:
        known = {t.turn_id for t in conversation.turns}
        app, scope = conversation.app, conversation.scope
        records = []
        qa = [q for q in sample["qa"] if q.get("evidence")]
        for i, q in enumerate(qa[:limit] if limit else qa):
            gold = normalise_gold(q["evidence"])
            start = time.perf_counter()
            result = app.search(scope, "bench", str(q["question"]), preset_name=preset_name, top_k=top_k)
            latency = (time.perf_counter() - start) * 1000
            ranked = [h.source_ids for h in result.hits]
            matchable = [g for g in gold if g in known]
            metrics = score_question(matchable, ranked)
            by_preset = {}
            for name in others:  # the candidates of leave-one-conversation-out selection
                alt = [h.source_ids for h in app.search(scope, "bench", str(q["question"]), preset_name=name,
                                                         top_k=top_k).hits]
                by_preset[name] = {"ranked_source_ids": alt, "metrics": score_question(matchable, alt)}
            records.append({
                "conversation": sample["sample_id"], "index": i, "question": q["question"],
                "category": q["category"], "gold_ids": matchable,
                "unmatched_gold_ids": [g for g in gold if g not in known],
                "ranked_memory_ids": [h.memory_id for h in result.hits],
                "ranked_layers": [h.layer for h in result.hits],
                "ranked_source_ids": ranked, "hits": [bool(set(s) & set(gold)) for s in ranked],
                "latency_ms": latency, "metrics": metrics,
                "raw_metrics": score_question(gold, ranked),  # unmatchable gold ids count as missed
                "session_metrics": session_metrics(gold, ranked),
                "by_preset": {preset_name: {"metrics": metrics}, **by_preset},
            })
            if advance is not None:
                advance(1)
        stats = {**conversation.stats(), "questions": len(records)}
        return records, stats


def print_table(agg: dict[str, Any], by_cat: dict[str, dict[str, Any]]) -> None:
    cols = ["questions", *AGG_KEYS, "latency_ms_p50", "latency_ms_p95"]
    print(f"{'':>22} " + " ".join(f"{c:>14}" for c in cols))
    for name, a in [("overall", agg), *sorted(by_cat.items())]:
        cells = [f"{a[c]:>14d}" if c == "questions" else f"{a[c]:>14.3f}" for c in cols]
        print(f"{name:>22} " + " ".join(cells))


def evaluation_protocol(records: Sequence[dict[str, Any]], preset: str, candidates: Sequence[str]
                        ) -> dict[str, Any]:
    """The raw, reported and audit-corrected rows, the session view, the unmatched questions, and (with
    candidates) leave-one-conversation-out selection beside the in-sample best."""
    out: dict[str, Any] = {
        "rows": {
            "raw (every gold id, unmatchable ones missed)": aggregate(records, field="raw_metrics"),
            "reported (matchable gold ids)": aggregate(records),
            "audit-corrected (questions with a matchable gold id)": aggregate([r for r in records if r["gold_ids"]]),
        },
        "sessions": aggregate(records, SESSION_KEYS, "session_metrics"),
        "unmatched_questions": [
            {"conversation": r["conversation"], "index": r["index"], "question": r["question"],
             "unmatched_gold_ids": r["unmatched_gold_ids"], "matchable_gold_ids": r["gold_ids"]}
            for r in records if r["unmatched_gold_ids"]],
    }
    if not candidates:
        return out
    def score(recs: Sequence[dict[str, Any]], name: str) -> float:
        return float(sum(r["by_preset"][name]["metrics"]["recall_any@10"] for r in recs)) / max(1, len(recs))

    conversations = sorted({r["conversation"] for r in records})
    chosen, held_out = {}, []
    for conv in conversations:
        train = [r for r in records if r["conversation"] != conv]
        best = max(candidates, key=lambda name: (score(train, name), name == preset))
        chosen[conv] = best
        held_out += [{"metrics": r["by_preset"][best]["metrics"], "latency_ms": r["latency_ms"]}
                     for r in records if r["conversation"] == conv]
    in_sample = {name: aggregate([{"metrics": r["by_preset"][name]["metrics"], "latency_ms": r["latency_ms"]}
                                  for r in records]) for name in candidates}
    best_in_sample = max(candidates, key=lambda name: (in_sample[name]["recall_any@10"], name == preset))
    out["selection"] = {"candidates": list(candidates), "chosen_per_held_out_conversation": chosen,
                        "cross_validated": aggregate(held_out), "in_sample_best": best_in_sample,
                        "in_sample": in_sample}
    return out


def print_protocol(protocol: dict[str, Any]) -> None:
    keys = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@10", "fraction@10", "ndcg@10", "mrr")
    print(f"{'':>52} " + " ".join(f"{k:>13}" for k in keys))
    rows = dict(protocol["rows"])
    if "selection" in protocol:
        sel = protocol["selection"]
        rows[f"in-sample best preset ({sel['in_sample_best']})"] = sel["in_sample"][sel["in_sample_best"]]
        rows["leave-one-conversation-out (cross-validated)"] = sel["cross_validated"]
    for name, row in rows.items():
        print(f"{name:>52} " + " ".join(f"{row[k]:>13.3f}" for k in keys))
    sess = protocol["sessions"]
    print("sessions: " + ", ".join(f"{k} {sess[k]:.3f}" for k in SESSION_KEYS))
    print(f"questions with gold ids that name no turn: {len(protocol['unmatched_questions'])}")
    if "selection" in protocol:
        print(f"chosen per held-out conversation: {protocol['selection']['chosen_per_held_out_conversation']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--preset", default="conversation", choices=sorted(PRESETS))
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--conversations", help="Comma-separated sample ids (default: all)")
    ap.add_argument("--limit-questions", type=int, help="Per conversation, for quick runs")
    ap.add_argument("--select-among", default="",
                    help="Comma-separated presets for leave-one-conversation-out selection (cross-validated figure)")
    args = ap.parse_args()
    candidates = [c for c in args.select_among.split(",") if c]
    unknown = [c for c in candidates if c not in PRESETS]
    if unknown:
        sys.exit(f"unknown preset(s) {unknown}; choose among {sorted(PRESETS)}")
    if candidates and args.preset not in candidates:
        candidates.append(args.preset)
    samples = load_samples(args.data, args.conversations)
    records: list[dict[str, Any]] = []
    per_conv: dict[str, Any] = {}
    questions = sum(min(len([q for q in s["qa"] if q.get("evidence")]), args.limit_questions or 10**9)
                    for s in samples)
    with tempfile.TemporaryDirectory(prefix="altm-locomo-") as tmp, progress("questions", questions) as advance:
        for sample in samples:
            recs, stats = asyncio.run(run_conversation(sample, args.preset, args.top_k, args.limit_questions,
                                                       Path(tmp), [c for c in candidates if c != args.preset],
                                                       advance))
            records += recs
            per_conv[sample["sample_id"]] = {**stats, **aggregate(recs)}
            r10 = per_conv[sample["sample_id"]]["recall_any@10"]
            print(f"{sample['sample_id']}: {stats['turns']} turns ingested in {stats['ingest_s']:.1f} s, "
                  f"{len(recs)} questions, recall_any@10 {r10:.3f}", flush=True)
    agg = aggregate(records)
    by_cat = {f"cat {c} {CATEGORIES.get(c, '?')}": aggregate([r for r in records if r["category"] == c])
              for c in sorted({r["category"] for r in records})}
    print_table(agg, by_cat)
    protocol = evaluation_protocol(records, args.preset, candidates)
    print_protocol(protocol)
    unmatched = sum(len(r["unmatched_gold_ids"]) for r in records)
    out = {
        "config": config_stamp(benchmark="locomo", preset=args.preset,
                               search=PRESETS[args.preset].model_dump(),
                               top_k=args.top_k, embedder=embedder_stamp(), model=None,
                               dataset=str(args.data), dataset_sha256=file_sha256(args.data),
                               conversations=sorted(per_conv), limit_questions=args.limit_questions,
                               select_among=candidates),
        "aggregate": agg,
        "by_category": by_cat,
        "by_conversation": per_conv,
        "protocol": protocol,
        "unmatched_gold_ids": unmatched,
        "questions": records,
    }
    path = write_record("locomo", out, args.out)
    print(f"unmatched gold ids: {unmatched}; record: {path}")


if __name__ == "__main__":
    main()
