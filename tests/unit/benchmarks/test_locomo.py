"""The LoCoMo benchmark's scoring, and that its JSON record recomputes to its own aggregates."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.locomo import (
    aggregate,
    evaluation_protocol,
    normalise_gold,
    recompute,
    run_conversation,
    score_question,
    session_metrics,
)

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "What are you working on these days?"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Researching adoption agencies for our family."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "I started pottery classes last week."},
        ],
        "session_2_date_time": "4:04 pm on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "We went camping at the beach with the kids."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "My pottery bowl came out of the kiln today!",
             "blip_caption": "a photo of a blue bowl"},
        ],
    },
    "qa": [
        {"question": "What did Ben research?", "answer": "adoption agencies", "evidence": ["D1:2"],
         "category": 1},
        {"question": "Where did Ben go camping?", "answer": "beach", "evidence": ["D2:1"], "category": 4},
        {"question": "What does Ana make?", "answer": "pottery", "evidence": ["D1:3; D2:2"], "category": 1},
        {"question": "No evidence here", "answer": "x", "evidence": [], "category": 5},
        {"question": "A bad id", "answer": "x", "evidence": ["D9:99"], "category": 2},
    ],
}


def test_gold_ids_are_split_and_normalised() -> None:
    assert normalise_gold(["D8:6; D9:17", "D1:3", "D1:3"]) == ["D8:6", "D9:17", "D1:3"]


def test_score_question_known_values() -> None:
    m = score_question(["a", "b"], [["x"], ["b"], ["a", "b"], ["y"]])
    assert m["recall_any@1"] == 0.0 and m["recall_any@5"] == 1.0 and m["recall_all@10"] == 1.0
    assert m["mrr"] == pytest.approx(0.5)
    # gains: rank 2 covers b, rank 3 covers a (b counted once)
    ideal = 1 + 1 / 1.584962500721156
    assert m["ndcg@10"] == pytest.approx((1 / 1.584962500721156 + 1 / 2) / ideal)
    assert score_question([], [["a"]])["recall_all@10"] == 0.0


def test_record_recomputes_to_its_aggregates(tmp_path: Path) -> None:
    records, stats = asyncio.run(run_conversation(SAMPLE, "conversation", 10, None, tmp_path))
    assert stats["turns"] == 5 and len(records) == 4  # the question without evidence is not a query
    bad = next(r for r in records if r["question"] == "A bad id")
    assert bad["unmatched_gold_ids"] == ["D9:99"] and bad["gold_ids"] == []  # kept, counted as a miss
    camping = next(r for r in records if r["question"] == "Where did Ben go camping?")
    assert camping["ranked_source_ids"][0] == ["D2:1"]
    record = orjson.loads(orjson.dumps({"aggregate": aggregate(records), "questions": records}))
    again = recompute(record)
    keys = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@10", "ndcg@10", "mrr", "questions")
    for key in keys:
        assert again[key] == pytest.approx(record["aggregate"][key]), key


def _question(conv: str, index: int, gold: list[str], unmatched: list[str],
              by_preset: dict[str, list[list[str]]]) -> dict[str, Any]:
    ranked = by_preset["conversation"]
    return {"conversation": conv, "index": index, "question": f"q{index}", "category": 1, "gold_ids": gold,
            "unmatched_gold_ids": unmatched, "ranked_source_ids": ranked, "latency_ms": 1.0,
            "metrics": score_question(gold, ranked), "raw_metrics": score_question(gold + unmatched, ranked),
            "session_metrics": session_metrics(gold + unmatched, ranked),
            "by_preset": {name: {"metrics": score_question(gold, r)} for name, r in by_preset.items()}}


def test_the_protocol_reports_raw_corrected_sessions_and_a_cross_validated_choice() -> None:
    """Issue 15, item 1: a preset that wins on the other conversations is the one scored on the held-out one,
    whatever it scores there; in-sample and cross-validated figures can differ."""
    hit, miss = [["D1:1"]], [["D7:1"]]
    records = [
        # conv-a: lexical finds it, conversation does not; conv-b and conv-c: the reverse
        _question("conv-a", 0, ["D1:1"], [], {"conversation": miss, "lexical": hit}),
        _question("conv-b", 0, ["D1:1"], [], {"conversation": hit, "lexical": miss}),
        _question("conv-c", 0, ["D1:1"], ["D9:99"], {"conversation": hit, "lexical": miss}),
        _question("conv-c", 1, [], ["D9:98"], {"conversation": [["D9:1"]], "lexical": miss}),
    ]
    protocol = evaluation_protocol(records, "conversation", ["conversation", "lexical"])
    rows = protocol["rows"]
    assert rows["reported (matchable gold ids)"]["recall_any@10"] == pytest.approx(2 / 4)
    assert rows["audit-corrected (questions with a matchable gold id)"]["recall_any@10"] == pytest.approx(2 / 3)
    assert rows["raw (every gold id, unmatchable ones missed)"]["recall_all@10"] == pytest.approx(1 / 4)
    assert protocol["sessions"]["recall_any@10"] == pytest.approx(3 / 4)  # D9:1 is in a gold session (D9)
    assert [q["index"] for q in protocol["unmatched_questions"]] == [0, 1]
    selection = protocol["selection"]
    assert selection["chosen_per_held_out_conversation"] == {
        "conv-a": "conversation", "conv-b": "conversation", "conv-c": "conversation"}
    assert selection["cross_validated"]["recall_any@10"] == pytest.approx(2 / 4)
    assert selection["in_sample_best"] == "conversation"
