"""The LoCoMo QA harness end to end against the OpenAI double: answers from prepare_turn's bundle, the judge's
labels, EM/F1, tokens and cost, failed calls and unparseable verdicts, and its scoring functions."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.locomo_qa import (
    NOT_MENTIONED,
    Prompts,
    Question,
    adversarial_options,
    chosen_option,
    endpoint_settings,
    exact_match,
    lexical_scores,
    main,
    normalise_answer,
    parse_args,
    parse_judge,
    question_of,
    recompute,
    token_f1,
)
from tests.support.openai_double import openai_double

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-qa",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I started pottery classes last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "I have been researching adoption agencies for our family."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "My favourite colour is blue."},
        ],
        "session_2_date_time": "4:04 pm on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "We went camping at the beach with the kids."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "My pottery bowl came out of the kiln today!"},
        ],
    },
    "qa": [
        {"question": "Where did Ben go camping?", "answer": "beach", "evidence": ["D2:1"], "category": 4},
        {"question": "What did Ben research?", "answer": "adoption agencies", "evidence": ["D1:2"], "category": 1},
        {"question": "When did Ana start pottery classes?", "answer": "The week before 8 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What does Ana make?", "answer": "pottery", "evidence": ["D1:1", "D2:2"], "category": 1},
        {"question": "What is Ana's favourite colour?", "answer": "blue", "evidence": ["D1:3"], "category": 4},
        {"question": "What did Ben say about his cat?", "adversarial_answer": "it ran away", "evidence": [],
         "category": 5},
        {"question": "Which kiln did Ben buy?", "adversarial_answer": "an electric one", "evidence": ["D2:2"],
         "category": 5},
        {"question": "Would Ana enjoy a ceramics fair?", "answer": "Likely yes; she makes pottery", "evidence": [],
         "category": 3},
    ],
}

# question → the answer model's reply (an int: an HTTP error) and the judge's reply
ANSWERS: dict[str, str | int] = {
    "Where did Ben go camping?": "The beach.",
    "What did Ben research?": "Adoption agencies for his family",
    "When did Ana start pottery classes?": "In June 2023",
    "What does Ana make?": 500,
    "What is Ana's favourite colour?": "Blue",
    "Which kiln did Ben buy?": "An electric one",
    "Would Ana enjoy a ceramics fair?": "likely yes",
}
VERDICTS: dict[str, str | int] = {
    "Where did Ben go camping?": '{"label": "CORRECT"}',
    "What did Ben research?": "CORRECT",
    "When did Ana start pottery classes?": '```json\n{"label": "WRONG"}\n```',
    "What is Ana's favourite colour?": "I think so",
    "What did Ben say about his cat?": "The answer abstains, as it should: CORRECT",
    "Which kiln did Ben buy?": '{"label":"WRONG"}',
    "Would Ana enjoy a ceramics fair?": 503,
}
ANSWER_USD = (50 * 0.5 + 50 * 1.5) / 1000  # one call: the double's usage (50 + 50 tokens) at the answer prices
JUDGE_USD = (50 * 0.1 + 50 * 0.2) / 1000


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def _question_in(prompt: str, table: dict[str, str | int]) -> str:
    asked = re.search(r"^Question: (.*)$", prompt, re.MULTILINE)
    assert asked is not None, prompt
    return next(q for q in [*table, "What did Ben say about his cat?"] if asked.group(1).startswith(q))


def scripted(body: dict[str, Any]) -> str | int:
    prompt = _prompt(body)
    if body["model"] == "grader":
        return VERDICTS[_question_in(prompt, VERDICTS)]
    assert body["model"] == "answerer"
    question = _question_in(prompt, ANSWERS)
    if question == "What did Ben say about his cat?":  # picks the "not mentioned" option by its letter
        letter = re.search(rf"\((a|b)\) {NOT_MENTIONED}", prompt)
        assert letter is not None
        return f"({letter.group(1)})"
    return ANSWERS[question]


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ALTM_") and "_LLM_" in name:
            monkeypatch.delenv(name)
    monkeypatch.setenv("ALTM_EMBEDDER", "none")
    monkeypatch.setenv("ALTM_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("ALTM_LLM_USD_PER_1K_PROMPT_TOKENS", "0.5")
    monkeypatch.setenv("ALTM_LLM_USD_PER_1K_COMPLETION_TOKENS", "1.5")
    monkeypatch.setenv("ALTM_JUDGE_LLM_USD_PER_1K_PROMPT_TOKENS", "0.1")
    monkeypatch.setenv("ALTM_JUDGE_LLM_USD_PER_1K_COMPLETION_TOKENS", "0.2")
    monkeypatch.setenv("QA_TEST_KEY", "sk-test")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_bytes(orjson.dumps([SAMPLE]))
    return path


def test_the_harness_answers_from_bundles_judges_and_scores(model_env: None, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "qa.json"
    with openai_double(scripted) as api:
        main(["--data", str(data), "--out", str(out), "--model", "answerer", "--base-url", api.base_url,
              "--api-key-env", "QA_TEST_KEY", "--judge-model", "grader", "--concurrency", "3"])
    # 8 answer calls (the 500 not retried) and 7 judge calls (none for the failed answer)
    assert sum(r["body"]["model"] == "answerer" for r in api.chat_requests) == 8
    assert sum(r["body"]["model"] == "grader" for r in api.chat_requests) == 7
    camping = next(_prompt(r["body"]) for r in api.chat_requests
                   if r["body"]["model"] == "answerer" and "Where did Ben go camping?" in _prompt(r["body"]))
    assert "<memories>" in camping and "We went camping at the beach" in camping  # the bundle is the context

    record = orjson.loads(out.read_bytes())
    rows = {r["question"]: r for r in record["questions"]}
    assert [r["index"] for r in record["questions"]] == list(range(8))

    failed = rows["What does Ana make?"]
    assert failed["answer"] is None and "500" in failed["answer_error"] and failed["judge_label"] is None
    assert failed["em"] is None and failed["answer_usage"]["prompt_tokens"] == 0 and failed["cost_usd"] == 0
    unparseable = rows["What is Ana's favourite colour?"]
    assert unparseable["judge_unparseable"] and unparseable["judge_label"] is None
    assert unparseable["judge_reply"] == "I think so" and unparseable["em"] == 1.0
    abstained = rows["What did Ben say about his cat?"]
    assert abstained["answer"] in ("(a)", "(b)") and abstained["scored_answer"] == NOT_MENTIONED
    assert abstained["gold"] == NOT_MENTIONED and abstained["em"] == 1.0 and abstained["judge_label"] == "CORRECT"
    judge_down = rows["Would Ana enjoy a ceramics fair?"]
    assert "503" in judge_down["judge_error"] and judge_down["judge_label"] is None
    assert judge_down["em"] == 1.0 and judge_down["f1"] == 1.0  # category 3: the first ';' alternative
    assert rows["Where did Ben go camping?"]["cost_usd"] == pytest.approx(ANSWER_USD + JUDGE_USD)
    camping_row = rows["Where did Ben go camping?"]
    assert camping_row["bundle_tokens"] > 0 and camping_row["evidence"] == ["D2:1"]
    assert "D2:1" in camping_row["bundle_source_ids"] and camping_row["evidence_in_bundle"] is True
    assert abstained["evidence_in_bundle"] is None  # no evidence ids: not counted either way

    s = record["summary"]
    f1_research = 2 * (2 / 5) * 1 / (2 / 5 + 1)  # "adoption agencies for his family" vs "adoption agencies"
    f1_pottery = 2 * (1 / 3) * (1 / 5) / (1 / 3 + 1 / 5)  # "in june 2023" vs "week before 8 may 2023"
    cat1, cat2, cat3 = s["cat 1 multi-hop"], s["cat 2 temporal"], s["cat 3 open-domain"]
    cat4, cat5 = s["cat 4 single-hop"], s["cat 5 adversarial"]
    assert (cat1["judged"], cat1["judge_accuracy"], cat1["strict_accuracy"], cat1["answer_errors"]) == (1, 1.0, 0.5, 1)
    assert cat1["exact_match"] == 0.0 and cat1["f1"] == pytest.approx(f1_research)
    assert cat2["judge_accuracy"] == 0.0 and cat2["f1"] == pytest.approx(f1_pottery)
    assert (cat3["judged"], cat3["judge_errors"], cat3["judge_accuracy"]) == (0, 1, 0.0)
    assert (cat4["judged"], cat4["judge_accuracy"], cat4["strict_accuracy"], cat4["judge_unparseable"]) == (
        1, 1.0, 0.5, 1)
    assert cat4["exact_match"] == 1.0
    assert (cat5["judge_accuracy"], cat5["exact_match"], cat5["f1"]) == (0.5, 0.5, 0.5)

    headline, everything = s["overall (1-4)"], s["overall (1-5)"]
    assert (headline["questions"], headline["judged"], headline["correct"]) == (6, 3, 2)
    assert headline["judge_accuracy"] == pytest.approx(2 / 3) and headline["strict_accuracy"] == pytest.approx(1 / 3)
    assert headline["exact_match"] == pytest.approx(3 / 5)
    assert headline["f1"] == pytest.approx((1 + f1_research + f1_pottery + 1 + 1) / 5)
    assert (everything["judged"], everything["judge_accuracy"]) == (5, pytest.approx(0.6))
    assert (everything["answer_errors"], everything["judge_errors"], everything["judge_unparseable"]) == (1, 1, 1)
    assert (everything["answer_prompt_tokens"], everything["answer_completion_tokens"]) == (350, 350)
    assert (everything["judge_prompt_tokens"], everything["judge_completion_tokens"]) == (300, 300)
    assert everything["answer_cost_usd"] == pytest.approx(7 * ANSWER_USD)
    assert everything["judge_cost_usd"] == pytest.approx(6 * JUDGE_USD)
    assert everything["cost_usd_per_question"] == pytest.approx((7 * ANSWER_USD + 6 * JUDGE_USD) / 8)
    assert everything["retrieval_ms_p95"] >= everything["retrieval_ms_p50"] > 0
    with_evidence = [r for r in record["questions"] if r["evidence"]]
    assert everything["evidence_in_bundle"] == pytest.approx(
        sum(r["evidence_in_bundle"] for r in with_evidence) / len(with_evidence))

    again = recompute(record)
    assert sorted(again) == sorted(s)
    for name, figures in s.items():
        assert again[name] == pytest.approx(figures), name
    config = record["config"]
    assert config["answer_model"]["model"] == "answerer" and config["judge_model"]["model"] == "grader"
    assert config["judge_model"]["usd_per_1k_prompt_tokens"] == 0.1 and "api_key" not in config["answer_model"]
    assert "$memories" in config["prompts"]["answer"]["text"]


def test_no_model_configured_is_a_one_line_error(model_env: None, data: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--data", str(data), "--out", str(tmp_path / "qa.json")])
    assert str(exited.value.code).startswith("locomo_qa: no answer model configured")
    with pytest.raises(SystemExit) as exited:
        main(["--data", str(data), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "NO_SUCH"])
    assert str(exited.value.code) == "locomo_qa: --api-key-env NO_SUCH: that environment variable is not set"
    assert not (tmp_path / "qa.json").exists()


def test_the_judge_inherits_the_answer_endpoint_but_not_its_key_elsewhere(
        model_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALTM_LLM_MODEL", "answerer")
    monkeypatch.setenv("ALTM_LLM_BASE_URL", "http://answers.example/v1")
    monkeypatch.setenv("ALTM_LLM_API_KEY", "sk-answers")
    answer, judge = endpoint_settings(parse_args([]))
    assert (answer.model, answer.api_key, answer.max_retries, answer.usd_per_1k_prompt_tokens) == (
        "answerer", "sk-answers", 0, 0.5)
    assert (judge.model, judge.base_url, judge.api_key) == ("answerer", "http://answers.example/v1", "sk-answers")
    assert judge.usd_per_1k_prompt_tokens == 0.1  # ALTM_JUDGE_LLM_* over ALTM_LLM_*
    _, elsewhere = endpoint_settings(parse_args(["--judge-model", "grader", "--judge-base-url", "http://j/v1"]))
    assert (elsewhere.model, elsewhere.base_url, elsewhere.api_key) == ("grader", "http://j/v1", "not-needed")
    _, keyed = endpoint_settings(parse_args(["--judge-base-url", "http://j/v1", "--judge-api-key-env", "QA_TEST_KEY"]))
    assert keyed.api_key == "sk-test"


def test_scoring_follows_squad_and_locomo() -> None:
    assert normalise_answer("The  Beach, at last!") == "beach at last"
    assert exact_match("An apple.", "apple") == 1.0 and exact_match("apples", "apple") == 0.0
    assert token_f1("red apple pie", "the apple") == pytest.approx(2 * (1 / 3) * 1 / (1 / 3 + 1))
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0 and token_f1("a b", "c") == 0.0
    open_domain = Question("c", 0, 3, "q", "Likely yes; because pottery")
    assert lexical_scores(open_domain, "likely yes") == (1.0, 1.0)
    adversarial = Question("c", 1, 5, "q", NOT_MENTIONED, {"a": NOT_MENTIONED, "b": "trap"})
    assert lexical_scores(adversarial, "No information available.") == (1.0, 1.0)
    assert lexical_scores(adversarial, "trap") == (0.0, 0.0)


def test_judge_replies_are_parsed_strictly() -> None:
    assert parse_judge('{"label": "CORRECT"}') == "CORRECT"
    assert parse_judge('Reasoning first. {"label": "wrong"}') == "WRONG"
    assert parse_judge("**WRONG**") == "WRONG" and parse_judge(" correct. ") == "CORRECT"
    assert parse_judge("It matches the gold answer, so CORRECT") == "CORRECT"
    for reply in ("", "I think so", "CORRECT or WRONG", '{"label": "INCORRECT"}', "the answer is not correct"):
        assert parse_judge(reply) is None, reply


def test_adversarial_questions_are_a_fixed_choice() -> None:
    item: dict[str, Any] = {"question": "What did Ben say about his cat?", "adversarial_answer": "it ran away",
                            "category": 5}
    q = question_of("conv-qa", 5, item)
    assert q is not None and q.gold == NOT_MENTIONED
    assert q.options == adversarial_options("conv-qa", item["question"], "it ran away")
    assert sorted(q.options.values()) == sorted([NOT_MENTIONED, "it ran away"])
    assert q.asked.endswith(f"(a) {q.options['a']} (b) {q.options['b']}.")
    assert chosen_option(q, "(b)") == q.options["b"] and chosen_option(q, "a.") == q.options["a"]
    assert chosen_option(q, "A cat food brand") == "A cat food brand"  # a word, not a letter
    assert question_of("c", 0, {"question": "q", "category": 4}) is None  # no gold answer, not a question


def test_the_published_prompts_load_with_their_placeholders() -> None:
    prompts = Prompts.load()
    answer = prompts.answer_messages("<memories>x</memories>", "Where?")[0]["content"]
    assert isinstance(answer, str) and "<memories>x</memories>" in answer and "Question: Where?" in answer
    judge = prompts.judge_messages("Where?", "beach", "The beach")[0]["content"]
    assert isinstance(judge, str) and "Gold answer: beach" in judge and '{"label": "CORRECT"}' in judge
