"""Compression by content type for context governance: JSON, code, logs, prose.

Each compressor keeps what it promises (JSON structure, code declarations and signal lines, log errors and
warnings, leading prose sentences plus query-matching ones) and says what it left out; the original stays
addressable by its CCR marker and can be fetched with ``drilldown``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from altm.recall.context._tokens import count_tokens, truncate_tokens


class ContentType(StrEnum):
    JSON = "json"
    CODE = "code"
    LOG = "log"
    PROSE = "prose"


@dataclass(frozen=True)
class Compressed:
    text: str
    content_type: ContentType
    compressed: bool
    tokens: int


_LOG_LINE = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[\w+\]|\d{2}:\d{2}:\d{2}|(?:INFO|DEBUG|WARN|WARNING|"
                       r"ERROR|FATAL|TRACE)\b)")
_LOG_SIGNAL = re.compile(r"\b(?:ERROR|FATAL|CRITICAL|WARN(?:ING)?|Exception|Traceback|Caused by)\b|^\s+at\s|"
                         r"^\s+File \"", re.IGNORECASE)
_CODE_LINE = re.compile(r"^\s*(?:def |class |async def |function |fn |func |public |private |protected |import |"
                        r"from \S+ import|#include|package |interface |struct |enum |type |const |let |var |return\b|"
                        r"raise\b|throw\b|@\w+)")
_CODE_HINT = re.compile(r"[{};]\s*$|^\s*(?:def|class|import|from|return|if|for|while)\b|=>|\)\s*:\s*$|"
                        r"^\s*[A-Za-z_][\w.\[\]]*\s*[+\-*/]?=\s*\S|^\s{4,}\S")
_SENT = re.compile(r"(?<=[.!?])\s+")


def detect(text: str) -> ContentType:
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            json.loads(stripped)
            return ContentType.JSON
        except ValueError:
            pass
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 3:
        if sum(bool(_LOG_LINE.match(ln)) for ln in lines) >= 0.6 * len(lines):
            return ContentType.LOG
        if sum(bool(_CODE_HINT.search(ln) or _CODE_LINE.match(ln)) for ln in lines) >= 0.4 * len(lines):
            return ContentType.CODE
    return ContentType.PROSE


def _sample_json(value: Any, max_items: int, depth: int = 0) -> Any:
    if isinstance(value, dict):
        return {k: _sample_json(v, max_items, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) <= max_items:
            return [_sample_json(v, max_items, depth + 1) for v in value]
        kept = [_sample_json(v, max_items, depth + 1) for v in value[:max_items]]
        return [*kept, f"... {len(value) - max_items} more items omitted"]
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + f"... ({len(value) - 200} chars omitted)"
    return value


def compress_json(text: str, budget: int, query: str = "") -> str:
    value = json.loads(text)
    for max_items in (5, 3, 2, 1):
        out = json.dumps(_sample_json(value, max_items), ensure_ascii=False)
        if count_tokens(out) <= budget:
            return out
    return truncate_tokens(out, budget)


def _keep_lines(lines: list[str], keep: Callable[[int, str], bool], budget: int, what: str) -> str:
    kept: list[str] = []
    omitted = 0
    for i, line in enumerate(lines):
        if keep(i, line):
            kept.append(line)
        else:
            omitted += 1
    text = "\n".join(kept) + (f"\n[{omitted} {what} omitted]" if omitted else "")
    return text if count_tokens(text) <= budget else truncate_tokens(text, budget)


def compress_code(text: str, budget: int, query: str = "") -> str:
    terms = _terms(query)
    return _keep_lines(
        text.splitlines(),
        lambda i, ln: bool(_CODE_LINE.match(ln)) or any(t in ln.casefold() for t in terms),
        budget, "lines (bodies)",
    )


def compress_log(text: str, budget: int, query: str = "") -> str:
    seen: set[str] = set()
    out: list[str] = []
    duplicates = dropped = 0
    for line in text.splitlines():
        if not _LOG_SIGNAL.search(line):
            dropped += 1
            continue
        key = re.sub(r"\d+", "#", line.strip())
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        out.append(line)
    tail = []
    if dropped:
        tail.append(f"{dropped} info/debug lines omitted")
    if duplicates:
        tail.append(f"{duplicates} repeated lines omitted")
    text_out = "\n".join(out) + (f"\n[{'; '.join(tail)}]" if tail else "")
    return text_out if count_tokens(text_out) <= budget else truncate_tokens(text_out, budget)


def compress_prose(text: str, budget: int, query: str = "") -> str:
    """Extractive: the first sentence, then sentences that share words with the query, in order."""
    sentences = [s for s in _SENT.split(text.strip()) if s]
    if not sentences:  # only whitespace: nothing to extract
        return truncate_tokens(text.strip(), max(1, budget))
    terms = _terms(query)
    scored = [(i, sum(t in s.casefold() for t in terms)) for i, s in enumerate(sentences)]
    chosen = {0} | {i for i, score in sorted(scored, key=lambda x: -x[1]) if score > 0}
    picked: list[int] = []
    for i in sorted(chosen, key=lambda i: (i != 0, -dict(scored)[i], i)):
        trial = sorted([*picked, i])
        body = " ".join(sentences[j] for j in trial)
        if count_tokens(body) + 8 > budget:
            continue
        picked = trial
    if not picked:
        return truncate_tokens(sentences[0] if sentences else text, max(1, budget - 8)) + " [...]"
    omitted = len(sentences) - len(picked)
    return " ".join(sentences[j] for j in picked) + (f" [{omitted} sentences omitted]" if omitted else "")


_COMPRESSORS = {ContentType.JSON: compress_json, ContentType.CODE: compress_code, ContentType.LOG: compress_log,
                ContentType.PROSE: compress_prose}


def compress(text: str, budget: int, query: str = "") -> Compressed:
    """``text`` itself when it fits ``budget`` tokens, else its compression by content type."""
    kind = detect(text)
    tokens = count_tokens(text)
    if tokens <= budget:
        return Compressed(text, kind, False, tokens)
    out = _COMPRESSORS[kind](text, max(1, budget), query)
    return Compressed(out, kind, True, count_tokens(out))


def _terms(query: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9_]{3,}", query.casefold())
            if w not in {"the", "and", "for", "with", "what", "when", "where", "how", "why", "who", "does", "did"}]
