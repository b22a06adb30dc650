"""LongMemEval, session level: Recall-any@K over ``answer_session_ids``, with the service's recall.

    python benchmarks/longmemeval.py [--data DIR_OR_FILE] [--out FILE.json] [--preset conversation]

Two input shapes are read:

* the ``longmemeval-mini`` folder (``sessions.jsonl`` + ``questions.jsonl``, supporting sessions in
  ``ground_truth.supporting_session_ids``): one store holds every session, each question queries it;
* an original LongMemEval JSON file (a list of questions with ``haystack_sessions``,
  ``haystack_session_ids``, ``haystack_dates`` and ``answer_session_ids``): one store per question.

Ranked memories are mapped to their sessions (first occurrence wins) and the metrics of ``locomo.py`` are
computed over the ranked session ids, so the output has the same shape and can be recomputed the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import Role, Scope, TurnEvent
from altm.core.settings import Settings
from altm.recall.retrieval import PRESETS
from altm.wiring import open_deployment
from benchmarks._progress import progress
from benchmarks._record import config_stamp, file_sha256, write_record
from benchmarks.locomo import aggregate, print_table, score_question

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "longmemeval-mini"
SCOPE = Scope(tenant_id="lme", workspace_id="bench", user_id="user", agent_id="assistant")
_SAFE = re.compile(r"[^A-Za-z0-9._:@+\-]")


def parse_date(text: str) -> datetime:
    """'2023/05/20 (Sat) 02:21' → aware datetime."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text).strip(), "%Y/%m/%d %H:%M").replace(
        tzinfo=UTC
    )


def session_id(raw: str) -> str:
    return _SAFE.sub("_", raw)[:128]


def turns_of(sid: str, date: str, turns: list[dict[str, Any]]) -> list[TurnEvent]:
    ts = parse_date(date)
    out = []
    for i, t in enumerate(turns):
        role = Role.USER if t.get("role") == "user" else Role.ASSISTANT
        out.append(
            TurnEvent(
                scope=SCOPE,
                session_id=session_id(sid),
                turn_id=f"{session_id(sid)}-{i}",
                role=role,
                content=str(t.get("content", "")),
                timestamp=ts,
            )
        )
    return out


def load(path: Path) -> list[tuple[str, list[TurnEvent], list[dict[str, Any]]]]:
    """Groups of (store name, turns, questions with ``question``, ``gold``, ``category``)."""
    if path.is_dir():
        sessions = [
            orjson.loads(line) for line in (path / "sessions.jsonl").read_bytes().splitlines() if line
        ]
        questions = [
            orjson.loads(line) for line in (path / "questions.jsonl").read_bytes().splitlines() if line
        ]
        turns = [t for s in sessions for t in turns_of(s["id"], s["timestamp"], s["turns"])]
        qs = [
            {
                "question": q["question"],
                "category": q.get("category", q.get("type")),
                "gold": [session_id(g) for g in q["ground_truth"]["supporting_session_ids"]],
                "id": q["id"],
            }
            for q in questions
        ]
        return [("mini", turns, qs)]
    groups = []
    for q in orjson.loads(path.read_bytes()):
        turns = [
            t
            for sid, date, sess in zip(
                q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
            )
            for t in turns_of(sid, date, sess)
        ]
        groups.append(
            (
                q["question_id"],
                turns,
                [
                    {
                        "question": q["question"],
                        "category": q.get("question_type"),
                        "id": q["question_id"],
                        "gold": [session_id(g) for g in q["answer_session_ids"]],
                    }
                ],
            )
        )
    return groups


async def run_group(
    name: str, turns: list[TurnEvent], questions: list[dict[str, Any]], preset_name: str, work: Path
) -> list[dict[str, Any]]:
    data_dir = work / session_id(name)
    deployment = await open_deployment(Settings(data_dir=data_dir, partitions=1), pipeline=True)
    await deployment.start()
    runtime = deployment.runtime
    assert runtime is not None
    try:
        await runtime.publish(turns)
        await runtime.run_until_idle()
        app = deployment.app
        out = []
        for q in questions:
            start = time.perf_counter()
            result = app.search(SCOPE, "bench", q["question"], preset_name=preset_name, top_k=50)
            latency = (time.perf_counter() - start) * 1000
            ranked: list[list[str]] = []
            for hit in result.hits:
                if hit.session_id and [hit.session_id] not in ranked:
                    ranked.append([hit.session_id])
            out.append(
                {
                    "id": q["id"],
                    "question": q["question"],
                    "category": q["category"],
                    "gold_ids": q["gold"],
                    "ranked_source_ids": ranked,
                    "hits": [r[0] in q["gold"] for r in ranked],
                    "latency_ms": latency,
                    "metrics": score_question(q["gold"], ranked),
                }
            )
        return out
    finally:
        await deployment.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--preset", default="conversation", choices=sorted(PRESETS))
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"no LongMemEval data at {args.data} (pass --data PATH)")
    records: list[dict[str, Any]] = []
    groups = list(load(args.data))
    with tempfile.TemporaryDirectory(prefix="altm-lme-") as tmp, progress("question groups", len(groups)) as advance:
        for name, turns, questions in groups:
            records += asyncio.run(run_group(name, turns, questions, args.preset, Path(tmp)))
            advance(1)
    agg = aggregate(records)
    by_cat = {
        str(c): aggregate([r for r in records if r["category"] == c])
        for c in sorted({str(r["category"]) for r in records})
    }
    print_table(agg, {k[:10]: v for k, v in by_cat.items()})
    digest = file_sha256(args.data / "questions.jsonl") if args.data.is_dir() else file_sha256(args.data)
    path = write_record(
        "longmemeval",
        {
            "config": config_stamp(
                benchmark="longmemeval",
                level="session",
                preset=args.preset,
                search=PRESETS[args.preset].model_dump(),
                dataset=str(args.data),
                dataset_sha256=digest,
                embedder="all-MiniLM-L6-v2-onnx-int8 (local)",
                model=None,
            ),
            "aggregate": agg,
            "by_category": by_cat,
            "questions": records,
        },
        args.out,
    )
    print(f"record: {path}")


if __name__ == "__main__":
    main()
