"""LoCoMo question answering end to end: each question answered by a model from ALTM's ``prepare_turn`` bundle,
then judged.

    python benchmarks/locomo_qa.py --data ../shared/benchmarks/locomo-dev/locomo-dev.json --out FILE.json \\
        --model NAME --base-url URL [--api-key-env VAR] [--judge-model NAME] [--judge-base-url URL] \\
        [--judge-api-key-env VAR] [--conversations conv-26,conv-30] [--limit-questions N] \\
        [--budget-tokens 2000] [--preset conversation] [--concurrency 4] [--pipeline-models none|env]

How a question is answered. Each conversation is ingested into a store of its own through the full pipeline
(``benchmarks/locomo.py``'s ``ingested_conversation``). Every question is then sent to ``prepare_turn`` (a turn
of its own in a session of its own, with the token budget ``--budget-tokens`` and the preset ``--preset``),
and the bundle's rendered text is all the answer model sees of the conversation (the prompt is
``benchmarks/prompts/locomo_answer.txt``). The pipeline does not run while questions are asked, so no question
is remembered into the bundle of the next. A judge model labels each answer CORRECT or WRONG against the gold
answer (``benchmarks/prompts/locomo_judge.txt``). Every QA item with a gold answer is a question, with or
without evidence ids.

Models. The answer model is ``--model`` at ``--base-url``, with the key in the environment variable named by
``--api-key-env``; each defaults to ALTM's own ``ALTM_LLM_MODEL``, ``ALTM_LLM_BASE_URL`` and
``ALTM_LLM_API_KEY``, and the timeout, retries (the ``openai`` client's, with backoff), temperature, output
tokens and prices (``ALTM_LLM_USD_PER_1K_PROMPT_TOKENS``, ``ALTM_LLM_USD_PER_1K_COMPLETION_TOKENS``) come from
the same ``ALTM_LLM_*`` settings. The judge is the answer model unless ``ALTM_JUDGE_LLM_*`` (inheriting
``ALTM_LLM_*`` field by field, like ALTM's per-task settings) or ``--judge-*`` say otherwise; a judge at another
base URL gets the answer endpoint's key only if told to (``ALTM_JUDGE_LLM_API_KEY``, ``--judge-api-key-env``).
The pipeline forms
memories without chat models by default (``--pipeline-models none``: rules and the ``ALTM_EMBEDDER`` embedder,
as in ``benchmarks/locomo.py``'s retrieval figures), so that configuring ``ALTM_LLM_*`` for the answers does not
turn on model formation; ``--pipeline-models env`` gives the pipeline its ``ALTM_<TASK>_LLM_*`` models (their
calls are not in the per-question figures).

Category 5 (adversarial). These questions ask about something the conversation never says: the data holds no
``answer`` but an ``adversarial_answer``, a plausible trap. As in LoCoMo's own evaluation (snap-research/locomo,
``task_eval``), the question is posed as a choice between "Not mentioned in the conversation" and the trap,
"(a) ... (b) ...", in an order fixed per question (a hash of conversation and question, so that runs repeat);
a reply that names an option by its letter stands for that option's text; and the answer is right exactly when
it says "not mentioned" or "no information available" (EM and F1 are then 1, else 0). The judge gets "Not
mentioned in the conversation" as the gold answer. Many published figures (Mem0's, for one) leave category 5
out: so does the headline row, "overall (1-4)"; "overall (1-5)" includes it.

Scores, overall and per named category. LLM-judge accuracy: CORRECT over the questions the judge labelled. A
reply that is neither JSON with a label, nor a lone label, nor a text in which exactly one of CORRECT and WRONG
appears in capitals is *unparseable*: counted apart, never as correct. Failed calls (an HTTP error or a timeout,
after the client's retries) are recorded in their question's row and counted (``answer_errors``,
``judge_errors``), and the run goes on. ``strict_accuracy`` counts every such question as wrong. Exact match
and token F1 as in SQuAD (lowercase; punctuation and the articles a, an, the removed; F1 over the tokens'
multiset), against the gold answer; for category 3 against its first ';'-separated alternative, as LoCoMo
does. LoCoMo's own F1 also stems words and splits category 1 answers on commas; ours does neither. Per
question: prompt and completion tokens from the API's ``usage`` and their cost at the configured prices,
answer and judge apart; the bundle's tokens; ``prepare_turn``'s latency (p50/p95); whether a gold evidence
turn is among those the bundle's memories are or cite (``evidence_in_bundle``, telling a retrieval miss from
an answering one). The JSON record holds the config stamp (models, prices, prompts' text and hash, dataset
hash) and a row per question, from which ``recompute`` gives every figure again.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import orjson
from openai import AsyncOpenAI, OpenAIError
from openai.types.chat import ChatCompletionMessageParam
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core.settings import Settings
from altm.models import LLMSettings, ModelTask, unconfigured
from altm.recall.retrieval import PRESETS
from benchmarks._progress import progress
from benchmarks._record import config_stamp, file_sha256, percentile, write_record
from benchmarks.locomo import CATEGORIES, DEFAULT_DATA, ingested_conversation, load_samples, normalise_gold

PROMPTS = Path(__file__).parent / "prompts"
NOT_MENTIONED = "Not mentioned in the conversation"
ABSTENTIONS = ("not mentioned", "no information available")
"""LoCoMo's rule for category 5: an answer that says one of these is right."""
ADVERSARIAL = 5
OPEN_DOMAIN = 3
LABELS = ("CORRECT", "WRONG")
QA_SESSION = "locomo-qa"
HEADLINE = "overall (1-4)"


class ModelConfigError(Exception):
    """The answer or judge model is not configured, or not usably."""


# -- prompts ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompts:
    """The answer and judge prompts, as published in ``benchmarks/prompts/``."""

    answer: Template
    judge: Template

    @classmethod
    def load(cls, directory: Path = PROMPTS) -> Prompts:
        return cls(_template(directory / "locomo_answer.txt", {"memories", "question"}),
                   _template(directory / "locomo_judge.txt", {"question", "gold", "answer"}))

    def answer_messages(self, memories: str, question: str) -> list[ChatCompletionMessageParam]:
        return [{"role": "user", "content": self.answer.substitute(memories=memories, question=question)}]

    def judge_messages(self, question: str, gold: str, answer: str) -> list[ChatCompletionMessageParam]:
        return [{"role": "user", "content": self.judge.substitute(question=question, gold=gold, answer=answer)}]

    def stamp(self) -> dict[str, Any]:
        return {name: {"sha256": hashlib.sha256(t.template.encode()).hexdigest(), "text": t.template}
                for name, t in (("answer", self.answer), ("judge", self.judge))}


def _template(path: Path, names: set[str]) -> Template:
    template = Template(path.read_text(encoding="utf-8"))
    used = set(template.get_identifiers())
    if used != names or not template.is_valid():
        raise ValueError(f"{path} must use exactly the placeholders {sorted(names)} (a literal $ is $$); "
                         f"it uses {sorted(used)}")
    return template


# -- questions ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One LoCoMo QA item as this harness asks it."""

    conversation: str
    index: int  # its position in the sample's ``qa`` list
    category: int
    text: str  # as in the data: what prepare_turn recalls for and the judge reads
    gold: str
    options: dict[str, str] | None = None  # category 5: letter → option text
    evidence: tuple[str, ...] = ()  # the dia_ids the data names as evidence

    @property
    def category_name(self) -> str:
        return CATEGORIES.get(self.category, "?")

    @property
    def asked(self) -> str:
        """The text the answer model gets (category 5: a choice between two options)."""
        if self.options is None:
            return self.text
        return f"{self.text} Select the correct answer: (a) {self.options['a']} (b) {self.options['b']}."


def adversarial_options(conversation: str, question: str, trap: str) -> dict[str, str]:
    """"Not mentioned" and the trap as options (a) and (b), in an order fixed by conversation and question."""
    first = hashlib.sha256(f"{conversation}|{question}".encode()).digest()[0] % 2 == 0
    return {"a": NOT_MENTIONED, "b": trap} if first else {"a": trap, "b": NOT_MENTIONED}


def question_of(conversation: str, index: int, item: dict[str, Any]) -> Question | None:
    """The question of a QA item; None for an item with no gold answer (none in LoCoMo outside category 5)."""
    category, text = int(item["category"]), str(item["question"])
    evidence = tuple(normalise_gold(item.get("evidence") or []))
    if category == ADVERSARIAL:
        trap = item.get("adversarial_answer", item.get("answer"))
        options = adversarial_options(conversation, text, str(trap)) if trap is not None else None
        return Question(conversation, index, category, text, NOT_MENTIONED, options, evidence)
    if item.get("answer") is None:
        return None
    return Question(conversation, index, category, text, str(item["answer"]), evidence=evidence)


def questions_of(sample: dict[str, Any], limit: int | None = None) -> list[Question]:
    found = [q for i, item in enumerate(sample["qa"]) if (q := question_of(sample["sample_id"], i, item))]
    return found[:limit] if limit else found


# -- scoring ------------------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_OPTION_LETTER = re.compile(r"^\(?([ab])(?:\)|[.:]|$)", re.IGNORECASE)
_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")


def normalise_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalise_answer(prediction) == normalise_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD's token F1 over the normalised tokens' multisets."""
    predicted, reference = normalise_answer(prediction).split(), normalise_answer(gold).split()
    if not predicted or not reference:
        return float(predicted == reference)
    common = sum((Counter(predicted) & Counter(reference)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(reference)
    return 2 * precision * recall / (precision + recall)


def abstains(answer: str) -> bool:
    low = answer.lower()
    return any(phrase in low for phrase in ABSTENTIONS)


def lexical_scores(question: Question, answer: str) -> tuple[float, float]:
    """(exact match, token F1) of an answer, by LoCoMo's conventions per category."""
    if question.category == ADVERSARIAL:
        right = float(abstains(answer))
        return right, right
    gold = question.gold.split(";")[0].strip() if question.category == OPEN_DOMAIN else question.gold
    return exact_match(answer, gold), token_f1(answer, gold)


def chosen_option(question: Question, reply: str) -> str:
    """A category-5 reply naming an option by its letter ("b", "(a)", "a) ...") stands for that option's text."""
    if question.options is None:
        return reply
    match = _OPTION_LETTER.match(reply.strip())
    return question.options[match.group(1).lower()] if match else reply


def parse_judge(reply: str) -> str | None:
    """CORRECT or WRONG from a judge's reply: a JSON object with a ``label``, a lone label, or a text in which
    exactly one of the two labels appears in capitals. Anything else is None: unparseable."""
    for match in _JSON_OBJECT.finditer(reply):
        try:
            value = orjson.loads(match.group(0))
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("label"), str):
            label = value["label"].strip().upper()
            return label if label in LABELS else None
    bare = reply.strip().strip("\"'`*.").strip().upper()
    if bare in LABELS:
        return bare
    found = set(_LABEL_WORD.findall(reply))
    return found.pop() if len(found) == 1 else None


# -- model calls --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    """One chat call: the reply's text, or why there is none; its usage and cost."""

    text: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    ms: float = 0.0

    def usage(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost_usd": self.cost_usd, "ms": self.ms}


class Endpoint:
    """An OpenAI-compatible chat endpoint with ALTM's model settings: the ``openai`` client with its timeout and
    retries, the temperature, output tokens and prices."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._client = AsyncOpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                   timeout=settings.timeout_s, max_retries=settings.max_retries)

    async def complete(self, messages: list[ChatCompletionMessageParam]) -> Completion:
        s = self.settings
        start = time.perf_counter()
        try:
            resp = await self._client.chat.completions.create(
                model=s.model or "", messages=messages, temperature=s.temperature, max_tokens=s.max_output_tokens)
        except OpenAIError as exc:
            return Completion(error=f"{type(exc).__name__}: {exc}", ms=(time.perf_counter() - start) * 1000)
        ms = (time.perf_counter() - start) * 1000
        prompt = resp.usage.prompt_tokens if resp.usage else 0
        completion = resp.usage.completion_tokens if resp.usage else 0
        cost = (prompt * s.usd_per_1k_prompt_tokens + completion * s.usd_per_1k_completion_tokens) / 1000
        text = resp.choices[0].message.content if resp.choices else None
        return Completion(text, None if text is not None else "the model returned no content", prompt, completion,
                          cost, ms)

    async def aclose(self) -> None:
        await self._client.close()


# -- the run ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A question with the bundle ``prepare_turn`` returned for it."""

    question: Question
    memories: str
    bundle_tokens: int
    bundle_items: int
    retrieval_ms: float
    source_ids: tuple[str, ...]  # the turns the bundle's memories are or cite


async def prepare_conversation(sample: dict[str, Any], questions: Sequence[Question], work: Path,
                               budget_tokens: int, preset: str,
                               pipeline_models: dict[ModelTask, LLMSettings] | None,
                               ) -> tuple[list[Prepared], dict[str, Any]]:
    """The conversation ingested, then each question's bundle, timed."""
    async with ingested_conversation(sample, work, pipeline_models) as conversation:
        prepared = []
        for q in questions:
            start = time.perf_counter()
            turn = await conversation.app.prepare_turn(conversation.scope, QA_SESSION, f"q{q.index}", q.text,
                                                       budget_tokens, preset_name=preset)
            ms = (time.perf_counter() - start) * 1000
            sources = tuple(dict.fromkeys(s for item in turn.bundle.items for s in item.source_ids))
            prepared.append(Prepared(q, turn.bundle.rendered, turn.bundle.tokens, len(turn.bundle.items), ms,
                                     sources))
        return prepared, conversation.stats()


def _row(p: Prepared) -> dict[str, Any]:
    q = p.question
    return {"conversation": q.conversation, "index": q.index, "category": q.category,
            "category_name": q.category_name, "question": q.text, "asked": q.asked, "gold": q.gold,
            "evidence": list(q.evidence), "bundle_source_ids": list(p.source_ids),
            "evidence_in_bundle": bool(set(q.evidence) & set(p.source_ids)) if q.evidence else None,
            "bundle_tokens": p.bundle_tokens, "bundle_items": p.bundle_items, "retrieval_ms": p.retrieval_ms}


async def answer_question(p: Prepared, prompts: Prompts, answerer: Endpoint, judge: Endpoint) -> dict[str, Any]:
    """The question's row: its answer from the bundle, EM and F1, the judge's label, tokens and cost."""
    q = p.question
    answered = await answerer.complete(prompts.answer_messages(p.memories, q.asked))
    row = {**_row(p), "answer": answered.text, "answer_error": answered.error, "answer_usage": answered.usage()}
    if answered.text is None:
        return {**row, "scored_answer": None, "em": None, "f1": None, "judge_reply": None, "judge_label": None,
                "judge_error": None, "judge_unparseable": False, "judge_usage": Completion().usage(),
                "cost_usd": answered.cost_usd}
    scored = chosen_option(q, answered.text)
    em, f1 = lexical_scores(q, scored)
    verdict = await judge.complete(prompts.judge_messages(q.text, q.gold, scored))
    label = parse_judge(verdict.text) if verdict.text is not None else None
    return {**row, "scored_answer": scored, "em": em, "f1": f1, "judge_reply": verdict.text,
            "judge_label": label, "judge_error": verdict.error,
            "judge_unparseable": verdict.text is not None and label is None,
            "judge_usage": verdict.usage(), "cost_usd": answered.cost_usd + verdict.cost_usd}


async def answer_all(prepared: Sequence[Prepared], prompts: Prompts, answerer: Endpoint, judge: Endpoint,
                     concurrency: int, advance: Callable[[int], None]) -> list[dict[str, Any]]:
    """Every question answered and judged, at most ``concurrency`` at a time; rows in question order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(p: Prepared) -> dict[str, Any]:
        async with gate:
            row = await answer_question(p, prompts, answerer, judge)
        advance(1)
        return row

    return list(await asyncio.gather(*(one(p) for p in prepared)))


@dataclass(frozen=True)
class RunOptions:
    budget_tokens: int
    preset: str
    concurrency: int
    limit_questions: int | None
    pipeline_models: dict[ModelTask, LLMSettings] | None


async def run(samples: Sequence[dict[str, Any]], options: RunOptions, prompts: Prompts, answer: LLMSettings,
              judge: LLMSettings, work: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of every question of every conversation, and per-conversation figures."""
    answerer, judging = Endpoint(answer), Endpoint(judge)
    rows: list[dict[str, Any]] = []
    per_conversation: dict[str, Any] = {}
    total = sum(len(questions_of(s, options.limit_questions)) for s in samples)
    try:
        with progress("questions", total) as advance:
            for sample in samples:
                prepared, stats = await prepare_conversation(
                    sample, questions_of(sample, options.limit_questions), work, options.budget_tokens,
                    options.preset, options.pipeline_models)
                conversation_rows = await answer_all(prepared, prompts, answerer, judging, options.concurrency,
                                                     advance)
                rows += conversation_rows
                summary = summarise(conversation_rows)
                per_conversation[sample["sample_id"]] = {**stats, **summary}
                print(f"{sample['sample_id']}: {stats['turns']} turns ingested in {stats['ingest_s']:.1f} s, "
                      f"{summary['questions']} questions, judge accuracy {summary['judge_accuracy']:.3f}",
                      flush=True)
    finally:
        await answerer.aclose()
        await judging.aclose()
    return rows, per_conversation


# -- figures ------------------------------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _usage_totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {}
    for call in ("answer", "judge"):
        for key in ("prompt_tokens", "completion_tokens", "cost_usd"):
            total = sum(r[f"{call}_usage"][key] for r in rows)
            out[f"{call}_{key}"] = total
            out[f"{call}_{key}_per_question"] = total / n if n else 0.0
    return out


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a set of question rows."""
    n = len(rows)
    answered = [r for r in rows if r["answer_error"] is None]
    labelled = [r for r in rows if r["judge_label"] is not None]
    correct = sum(r["judge_label"] == "CORRECT" for r in labelled)
    latencies = [r["retrieval_ms"] for r in rows]
    with_evidence = [r["evidence_in_bundle"] for r in rows if r["evidence_in_bundle"] is not None]
    return {
        "questions": n, "answered": len(answered), "judged": len(labelled), "correct": correct,
        "judge_accuracy": correct / len(labelled) if labelled else 0.0,
        "strict_accuracy": correct / n if n else 0.0,
        "answer_errors": n - len(answered),
        "judge_errors": sum(r["judge_error"] is not None for r in rows),
        "judge_unparseable": sum(bool(r["judge_unparseable"]) for r in rows),
        "exact_match": _mean([r["em"] for r in answered]),
        "f1": _mean([r["f1"] for r in answered]),
        **_usage_totals(rows),
        "cost_usd_per_question": sum(r["cost_usd"] for r in rows) / n if n else 0.0,
        "bundle_tokens_mean": _mean([r["bundle_tokens"] for r in rows]),
        "evidence_in_bundle": _mean([float(hit) for hit in with_evidence]),
        "retrieval_ms_p50": percentile(latencies, 0.50),
        "retrieval_ms_p95": percentile(latencies, 0.95),
    }


def summaries(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Overall without and with category 5, and per named category."""
    groups: dict[str, list[dict[str, Any]]] = {
        HEADLINE: [r for r in rows if r["category"] != ADVERSARIAL], "overall (1-5)": list(rows)}
    for category in sorted({r["category"] for r in rows}):
        groups[f"cat {category} {CATEGORIES.get(category, '?')}"] = [r for r in rows if r["category"] == category]
    return {name: summarise(group) for name, group in groups.items()}


def recompute(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every figure of a record, from its per-question rows."""
    return summaries(record["questions"])


_COLUMNS = (("questions", "n", "d"), ("judged", "judged", "d"), ("judge_accuracy", "acc", ".3f"),
            ("strict_accuracy", "strict", ".3f"), ("exact_match", "EM", ".3f"), ("f1", "F1", ".3f"),
            ("answer_errors", "ans.err", "d"), ("judge_errors", "jdg.err", "d"),
            ("judge_unparseable", "jdg.unp", "d"), ("answer_prompt_tokens_per_question", "in tok/q", ".0f"),
            ("answer_completion_tokens_per_question", "out tok/q", ".1f"),
            ("answer_cost_usd_per_question", "USD/q", ".5f"), ("judge_cost_usd_per_question", "judge USD/q", ".5f"),
            ("bundle_tokens_mean", "bundle tok", ".0f"), ("evidence_in_bundle", "evid.in", ".3f"),
            ("retrieval_ms_p50", "p50 ms", ".1f"),
            ("retrieval_ms_p95", "p95 ms", ".1f"))


def print_table(table: dict[str, dict[str, Any]]) -> None:
    print(f"{'':>22} " + " ".join(f"{title:>11}" for _, title, _ in _COLUMNS))
    for name, figures in table.items():
        print(f"{name:>22} " + " ".join(f"{figures[key]:>11{fmt}}" for key, _, fmt in _COLUMNS))


# -- configuration and the command line -------------------------------------------------------------------------


def _key_from(variable: str | None, option: str) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ModelConfigError(f"{option} {variable}: that environment variable is not set")
    return value


def _overridden(settings: LLMSettings, **values: str | None) -> LLMSettings:
    return settings.model_copy(update={k: v for k, v in values.items() if v is not None})


def endpoint_settings(args: argparse.Namespace) -> tuple[LLMSettings, LLMSettings]:
    """The answer model's and the judge's settings: ``ALTM_LLM_*`` (the judge: ``ALTM_JUDGE_LLM_*`` over the
    answer model's), overridden by the command line."""
    try:
        base, judge_env = LLMSettings(), LLMSettings(_env_prefix="ALTM_JUDGE_LLM_")
    except ValidationError as exc:
        raise ModelConfigError(f"invalid model settings in the environment: {exc.errors()[0]['msg']}") from None
    answer = _overridden(base, model=args.model, base_url=args.base_url,
                         api_key=_key_from(args.api_key_env, "--api-key-env"))
    if not answer.configured:
        raise ModelConfigError("no answer model configured: pass --model NAME --base-url URL (or set "
                               "ALTM_LLM_MODEL and ALTM_LLM_BASE_URL) for an OpenAI-compatible endpoint")
    judge = answer.model_copy(update={k: getattr(judge_env, k) for k in judge_env.model_fields_set})
    judge = _overridden(judge, model=args.judge_model, base_url=args.judge_base_url,
                        api_key=_key_from(args.judge_api_key_env, "--judge-api-key-env"))
    own_key = "api_key" in judge_env.model_fields_set or args.judge_api_key_env is not None
    if judge.base_url != answer.base_url and not own_key:  # the answer endpoint's key never goes elsewhere
        judge = judge.model_copy(update={"api_key": unconfigured().api_key})
    return answer, judge


def endpoint_stamp(settings: LLMSettings) -> dict[str, Any]:
    """What the record says of an endpoint (never its key)."""
    return settings.model_dump(include={"model", "base_url", "timeout_s", "max_retries", "temperature",
                                        "max_output_tokens", "usd_per_1k_prompt_tokens",
                                        "usd_per_1k_completion_tokens"})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--conversations", help="Comma-separated sample ids (default: all)")
    ap.add_argument("--limit-questions", type=int, help="Per conversation, for quick runs")
    ap.add_argument("--model", help="Answer model (default: ALTM_LLM_MODEL)")
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
                    "(default: ALTM_LLM_BASE_URL)")
    ap.add_argument("--api-key-env", help="Environment variable holding the API key (default: ALTM_LLM_API_KEY)")
    ap.add_argument("--judge-model", help="Judge model (default: ALTM_JUDGE_LLM_MODEL, else the answer model)")
    ap.add_argument("--judge-base-url", help="Judge endpoint (default: ALTM_JUDGE_LLM_BASE_URL, else the answer one)")
    ap.add_argument("--judge-api-key-env", help="Environment variable holding the judge's API key")
    ap.add_argument("--budget-tokens", type=int, default=2000, help="prepare_turn's token budget")
    ap.add_argument("--preset", default="conversation", choices=sorted(PRESETS))
    ap.add_argument("--concurrency", type=int, default=4, help="Questions answered and judged at once")
    ap.add_argument("--pipeline-models", choices=("none", "env"), default="none",
                    help="none: the pipeline forms memories without chat models; env: from ALTM_<TASK>_LLM_*")
    args = ap.parse_args(argv)
    if args.budget_tokens < 1 or args.concurrency < 1:
        ap.error("--budget-tokens and --concurrency must be at least 1")
    return args


def build_record(args: argparse.Namespace, answer: LLMSettings, judge: LLMSettings, prompts: Prompts,
                 rows: list[dict[str, Any]], per_conversation: dict[str, Any]) -> dict[str, Any]:
    return {
        "config": config_stamp(
            benchmark="locomo-qa", preset=args.preset, budget_tokens=args.budget_tokens,
            answer_model=endpoint_stamp(answer), judge_model=endpoint_stamp(judge),
            pipeline_models=args.pipeline_models, embedder=Settings().embedder, concurrency=args.concurrency,
            dataset=str(args.data), dataset_sha256=file_sha256(args.data), conversations=sorted(per_conversation),
            limit_questions=args.limit_questions, prompts=prompts.stamp(),
            scoring="judge: CORRECT/judged; EM/F1: SQuAD normalisation; category 3 gold: first ';' alternative; "
                    "category 5: LoCoMo's two options, right iff the answer says 'not mentioned' or "
                    "'no information available'"),
        "summary": summaries(rows),
        "by_conversation": per_conversation,
        "questions": rows,
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        answer, judge = endpoint_settings(args)
    except ModelConfigError as exc:
        sys.exit(f"locomo_qa: {exc}")
    prompts = Prompts.load()
    samples = load_samples(args.data, args.conversations)
    options = RunOptions(args.budget_tokens, args.preset, args.concurrency, args.limit_questions,
                         {} if args.pipeline_models == "none" else None)
    with tempfile.TemporaryDirectory(prefix="altm-locomo-qa-") as tmp:
        rows, per_conversation = asyncio.run(run(samples, options, prompts, answer, judge, Path(tmp)))
    record = build_record(args, answer, judge, prompts, rows, per_conversation)
    print_table(record["summary"])
    path = write_record("locomo-qa", record, args.out)
    print(f"answer model {answer.model}, judge {judge.model}; record: {path}")


if __name__ == "__main__":
    main()
