from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from benchmarks.locomo import recompute
from benchmarks.longmemeval import load, run_group

ORIGINAL = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What degree did I graduate with?",
        "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_other", "answer_abc"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "Can you suggest a pasta recipe?"},
                {"role": "assistant", "content": "Try carbonara."},
            ],
            [
                {
                    "role": "user",
                    "content": "I graduated with a degree in Business Administration last year.",
                    "has_answer": True,
                },
                {"role": "assistant", "content": "Congratulations on your Business Administration degree!"},
            ],
        ],
        "answer_session_ids": ["answer_abc"],
    }
]


def test_original_longmemeval_shape_is_read_and_scored(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_bytes(orjson.dumps(ORIGINAL))
    ((name, turns, questions),) = load(path)
    assert name == "q1" and len(turns) == 4 and questions[0]["gold"] == ["answer_abc"]
    records = asyncio.run(run_group(name, turns, questions, "conversation", tmp_path / "work"))
    (rec,) = records
    assert rec["ranked_source_ids"][0] == ["answer_abc"] and rec["metrics"]["recall_any@1"] == 1.0
    assert recompute({"questions": records})["recall_any@1"] == 1.0
