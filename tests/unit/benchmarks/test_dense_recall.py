"""The dense-recall benchmark: each question's nearest turns under a local embedder, scored as locomo.py scores."""

from __future__ import annotations

from altm.models import shared_local_e5, shared_local_minilm
from benchmarks.dense_recall import run_model
from tests.unit.benchmarks.test_locomo import SAMPLE


def test_each_question_is_scored_against_its_nearest_turns() -> None:
    for model in (shared_local_minilm(), shared_local_e5()):
        records, seconds, texts = run_model(model, [SAMPLE], top_k=2)
        assert texts == 5 + 4 and seconds > 0  # five turns, four questions with evidence
        by_question = {r["index"]: r for r in records}
        assert [len(r["ranked_source_ids"]) for r in records] == [2, 2, 2, 2]
        camping = by_question[1]
        assert camping["gold_ids"] == ["D2:1"] and camping["ranked_source_ids"][0] == ["D2:1"]
        assert camping["metrics"]["recall_any@1"] == 1.0
        assert by_question[3]["gold_ids"] == []  # the bad id names no turn: nothing to hit
        assert by_question[3]["metrics"]["recall_any@10"] == 0.0
