"""The cross-validation of the preset's constants: each fold tunes on the other conversations only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from altm.recall.retrieval import PRESETS, SearchConfig
from benchmarks.locomo import score_question
from benchmarks.locomo_cv import (
    AXES,
    Choice,
    GridScores,
    Question,
    choice_of,
    config_at,
    coordinate_ascent,
    main,
    nested_cv,
    with_value,
)
from tests.unit.benchmarks.test_locomo import SAMPLE


def test_the_shipped_preset_lies_on_the_grid_and_comes_back_from_it() -> None:
    base = PRESETS["conversation"]
    start = choice_of(base)
    assert [a for a, _ in start] == list(AXES)
    assert all(v in AXES[a] for a, v in start)  # every shipped constant is one of the values a fold may keep
    assert config_at(base, start) == base
    off = config_at(base, with_value(start, "neighbour_weight", 0.0))
    assert off.neighbour_seeds == 0 and off.channel_weights["neighbours"] == 0.0


def test_coordinate_ascent_keeps_only_changes_that_raise_the_score() -> None:
    start = choice_of(PRESETS["conversation"])
    wanted = {"time_prior": 0.8, "candidates": 200.0}
    def score(choice: Choice) -> float:
        c = dict(choice)
        return sum(1.0 for a, v in wanted.items() if c[a] == v)  # every other axis: a tie

    best, value = coordinate_ascent(score, start)
    assert dict(best) == {**dict(start), **wanted} and value == 2.0
    flat, flat_value = coordinate_ascent(lambda _: 0.5, start)
    assert flat == start and flat_value == 0.5  # ties keep the shipped values


def _grid(prefers: dict[str, float]) -> GridScores:
    """Conversations whose one question is found only when ``time_prior`` has the value the conversation
    prefers (a stand-in for constants that suit some conversations and not others)."""
    questions = {conv: [Question(conv, 0, f"q of {conv}", 2, [f"{conv}:1"])] for conv in prefers}

    def search(conversation: str, config: SearchConfig, q: Question) -> list[list[str]]:
        return [[f"{conversation}:1"]] if config.time_prior == prefers[conversation] else [["other"]]

    return GridScores(PRESETS["conversation"], questions, search)


def test_each_fold_chooses_on_the_other_conversations_only() -> None:
    prefers = {"a": 0.8, "b": 0.0, "c": 0.0}
    result: dict[str, Any] = nested_cv(_grid(prefers), list(prefers), choice_of(PRESETS["conversation"]))
    folds = {f["held_out"]: f for f in result["folds"]}
    # holding "a" out, the others prefer 0.0: "a" is missed, as a conversation nobody tuned on would be
    assert folds["a"]["chosen"]["time_prior"] == 0.0 and folds["a"]["held_out_aggregate"]["recall_any@10"] == 0.0
    # holding "b" out, "a" and "c" tie: the first value that raised the score (0.0) stays, and suits "b"
    assert folds["b"]["chosen"]["time_prior"] == 0.0 and folds["b"]["held_out_aggregate"]["recall_any@10"] == 1.0
    assert folds["c"]["changed_from_shipped"] == {"time_prior": 0.0}
    assert sorted(r["conversation"] for r in result["held_out_questions"]) == ["a", "b", "c"]
    assert result["cross_validated"]["recall_any@10"] == pytest.approx(2 / 3)
    assert result["shipped_in_sample"]["recall_any@10"] == 0.0  # the shipped 0.4 suits none of them


def test_the_cross_validated_figure_is_below_a_fit_to_every_conversation() -> None:
    """Two conversations prefer 0.8, one 0.0: fitted to all three, 0.8 finds two of three; but each
    conversation held out is scored with what the other two chose, which never suits it."""
    prefers = {"a": 0.8, "b": 0.8, "c": 0.0}
    result = nested_cv(_grid(prefers), list(prefers), choice_of(PRESETS["conversation"]))
    assert result["in_sample_optimum"]["chosen"]["time_prior"] == 0.8
    assert result["in_sample_optimum"]["recall_any@10"] == pytest.approx(2 / 3)
    assert result["cross_validated"]["recall_any@10"] == 0.0


def test_every_configuration_is_searched_once_per_conversation() -> None:
    grid = _grid({"a": 0.8, "b": 0.0})
    searched: list[tuple[str, float]] = []
    inner = grid.search

    def counting(conversation: str, config: SearchConfig, q: Question) -> list[list[str]]:
        searched.append((conversation, config.time_prior))
        return inner(conversation, config, q)

    grid.search = counting
    start = choice_of(PRESETS["conversation"])
    grid.of(start, "a")
    grid.of(start, "a")
    assert searched == [("a", 0.4)]
    nested_cv(grid, ["a", "b"], start, passes=2)
    assert len(searched) == len(grid.rows)  # one question per conversation: one search per (choice, conversation)


def test_the_script_ingests_each_conversation_once_and_writes_its_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end on two tiny conversations through the full pipeline: one record with the folds, the held-out
    rows (each recomputes to its metrics) and the shipped preset's in-sample figure."""
    monkeypatch.setenv("ALTM_EMBEDDER", "none")
    other = {**SAMPLE, "sample_id": "conv-other"}
    data = tmp_path / "two.json"
    data.write_bytes(orjson.dumps([SAMPLE, other]))
    out = tmp_path / "cv.json"
    monkeypatch.setattr(sys, "argv", ["locomo_cv.py", "--data", str(data), "--out", str(out), "--passes", "1"])
    main()
    record = orjson.loads(out.read_bytes())
    assert [f["held_out"] for f in record["folds"]] == ["conv-test", "conv-other"]
    held = record["held_out_questions"]
    assert len(held) == 8 and record["cross_validated"]["questions"] == 8  # 4 queries each
    assert all(score_question(r["gold_ids"], r["ranked_source_ids"]) == r["metrics"] for r in held)
    camping = next(r for r in held if r["question"] == "Where did Ben go camping?")
    assert camping["ranked_source_ids"][0] == ["D2:1"]
    assert record["shipped_in_sample"]["questions"] == 8 and record["config"]["objective"] == "recall_any@10"
    assert record["grid"]["configurations_scored"] >= 1 + sum(len(v) - 1 for v in AXES.values())
