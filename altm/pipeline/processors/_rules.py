"""Deterministic text rules behind the model-free methods (cue phrases, entities, dates, values).

Everything here is a pure function of its input text, so the model-free pipeline is reproducible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from altm.core import APOSTROPHES, Kind

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_WS = re.compile(r"\s+")

MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})(?:,?\s+\d{{4}})?|(?:{WEEKDAYS})s?|"
    r"(?:next|last|this)\s+(?:week|month|year|quarter)|tomorrow|yesterday|today|tonight)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:\s?(?:%|ms|s|gb|mb|kb|k|rows|lines|minutes|hours|days))?\b",
                     re.IGNORECASE)
_IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
_HOST = re.compile(r"(?<![\w-])[a-z]{2,10}-\d{1,4}(?![\w-])")  # db-01, web-3: hosts and nodes named in lower case
_HEADS = (
    "service|services|cache|pipeline|database|cluster|api|queue|gateway|server|endpoint|dashboard|repo|"
    "repository|library|module|job|worker|bucket|index|schema|table|app|runbook|migration|project|team|"
    "feature|script|exports|report|reports|suite|integration|workflow|backend|frontend|monolith|microservice"
)
_NOUN_PHRASE = re.compile(  # "the billing service", "our session cache": a system named by a common noun
    rf"\b(?:the|our|my|their|your|this|that)\s+((?:[a-z][a-z0-9\-]*\s+){{1,2}}(?:{_HEADS}))\b")
_NOT_MODIFIERS = frozenset("new old same other whole entire first last next main only big small whole".split())
# a relative path or file name starts where no word, handle or dash is before it (from every "a-" of "a-a-a-"
# the scan ran to the end: quadratic)
_PATH = re.compile(r"(?:(?<![\w@<])~?/[\w.\-]+(?:/[\w.\-{}]+)*|(?<![\w@<\-])(?:[\w\-]+(?:/[\w.\-]+)+\.\w{1,5}|"
                   r"[\w\-]+\.(?:py|md|json|yaml|yml|toml|sql|js|ts|go|rs|java|txt|csv|sh|cfg|ini|lock)))\b")
_RUN = re.compile(r"\S+")
_LONGEST_PATH = 256
"""A path lies inside one run of non-space characters; runs longer than any path are not read (``_PATH`` scans a
run from each segment's start: quadratic in the run's length on "a/.a/.a/.")."""
_URL = re.compile(r"\bhttps?://[^\s)>\]]+")
# a name starts where no name character is before it: from every capital of "A.A.A." the scan ran to the end
_VERSIONED = re.compile(r"(?<![\w+#.])([A-Z][A-Za-z0-9+#.]*[A-Za-z+#])\s+(\d+(?:\.\d+)*)\b")
_CAPS_RUN = re.compile(r"\b(?:[A-Z][a-zA-Z0-9+#]*(?:[A-Z][a-zA-Z0-9+#]*)*)(?:\s+[A-Z][a-zA-Z0-9+#]+)*\b")

_COMMON_CAPS = frozenset(
    "i i'm i've i'd i'll im a an the we our my you your it its this that these those he she they them his her "
    "hi hello hey thanks thank yes no ok okay sure also actually quick back next then so but and or if when "
    "what why how where who which please let let's lets great nice good right understood noted got will do "
    "done plan todo note avoid don't dont never always maybe well just still now here there is are was were "
    "be been can could should would must may might monday tuesday wednesday thursday friday saturday sunday "
    "january february march april june july august september october november december "
    "today tomorrow yesterday tonight after before while since because however instead don doesn didn can won isn "
    "aren wasn weren shouldn couldn wouldn haven hasn let that's there's what's it's".split()
)

_LEADING = frozenset(
    "in on at for with from by to of about into onto over under after before during through between across against "
    "among around behind below beside beyond near off out past per toward towards upon within without last every "
    "each all some any many most few several both either neither one two three four five six seven eight nine ten "
    "first second third another other such as like than".split()
)
"""Words that open a sentence, and so are capitalised, without being part of a name ("In hindsight", "Last week",
"With Kafka"): a run of capitalised words that opens a sentence loses them at its start (inside a sentence they
are part of the name: "at Two Sigma", "the Four Seasons")."""

_NEGATED_VALUE = re.compile(r"\bnot\s+((?:" + _DATE.pattern[2:-2] + r")|\d+(?:[.,]\d+)*)", re.IGNORECASE)

CORRECTION_CUES = re.compile(
    r"\b(actually|correction|i meant|no longer|not anymore|anymore|changed|moved|instead of|now it is|"
    r"it is now|is now|are now|update:|scratch that|turns out)\b",
    re.IGNORECASE,
)

_SUBJECT = re.compile(
    r"\b(?:the|my|our|their|his|her)\s+((?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]*)\s+"
    r"(?:is|are|was|were|moved|changed|has\s+been|have\s+been|will\s+be|got|became|slipped|shifted)\b",
    re.IGNORECASE,
)

_ANTI = re.compile(
    r"\b(?:don't|do not|dont|never|avoid|stop|shouldn't|should not|quit)\s+(?P<pattern>.+?)"
    r"(?:,?\s+(?:because|since|as|otherwise|or else)\s+(?P<why>.+?))"
    r"(?:[;,.]\s*|\s+-\s+|\s+and\s+)(?:(?:instead,?\s+)?(?:use|prefer|try|do|go with|write|run|switch to|"
    r"rely on)\s+(?P<better>.+?)(?:\s+instead)?)?[.!]?$",
    re.IGNORECASE,
)
_ANTI_MISTAKE = re.compile(
    r"^(?P<pattern>.+?)\s+(?:was|is)\s+(?:a\s+)?(?:mistake|bad idea|a trap|an anti-pattern|antipattern)"
    r"(?:\s*(?:because|since|as)\s+(?P<why>.+?))?(?:[;,.]\s*(?:use|prefer|try|do)\s+(?P<better>.+?)"
    r"(?:\s+instead)?)?[.!]?$",
    re.IGNORECASE,
)

_CUES: list[tuple[Kind, re.Pattern[str]]] = [
    (Kind.PREFERENCE, re.compile(
        r"\b(?:i|we)\s+(?:really\s+)?(?:prefer|like|love|enjoy|hate|dislike|can't stand|want|'d rather|"
        r"would rather|'d like|would like)\b|\bmy\s+(?:favou?rite|preferred)\b|\bi'm\s+(?:a\s+)?fan of\b|"
        r"\b(?:i|we)'d\s+(?:rather|prefer|like)\b|"
        r"\bplease\s+(?:always|never|don't|do not|use|write|keep)\b|\bi\s+(?:don't|do not)\s+(?:like|want)\b|"
        r"\bi\s+(?:always|usually|normally|tend to)\s+(?!need|have|forget|get)\w+",
        re.IGNORECASE)),
    (Kind.DECISION, re.compile(
        r"\b(?:we|i|they|the team)\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|chosen|settled on|opted)\b|"
        r"\b(?:we'll|we will|let's|lets)\s+(?:go with|use|stick with|keep|deploy|switch)\b|\bdecision\s*:|"
        r"\bwe're going (?:to|with)\b|\bwe are going (?:to|with)\b",
        re.IGNORECASE)),
    (Kind.OUTCOME, re.compile(
        r"\b(?:it|that|this|which)\s+(?:worked|failed|succeeded|helped|didn't work|did not work)\b|"
        r"\bi tried\b.+\b(?:and|but)\b|"
        r"\b(?:worked|succeeded|failed|finished|passed|fixed|resolved|solved|went live|shipped|"
        r"completed)\b.*\b(?:without|in \d|after|because|successfully)|\bwas (?:a )?success(?:ful)?\b|"
        r"\b(?:deploy|deployment|build|migration|test|job|release)\s+(?:to \w+\s+)?"
        r"(?:failed|succeeded|passed|broke|worked)\b|"
        r"\bwent (?:fine|well|smoothly|live|badly|wrong)\b|\b(?:fixed|resolved|solved)\s+(?:the|it|this|that)\b|"
        r"\bresolution\s*:|"
        # a measured result: "3x faster", "18% faster", "40 percent cheaper"
        r"\b\d+(?:\.\d+)?\s?(?:x|%|percent)\s+(?:faster|slower|cheaper|smaller|bigger|larger|better|worse|"
        r"fewer|less|more)\b|"
        r"^(?:we |i )?(?:booked|shipped|launched|released|merged|signed)\b|"
        # a completion the speaker reports: "I finished the migration", "we finally shipped it"
        r"\b(?:i|we)\s+(?:just\s+|finally\s+|already\s+)?(?:finished|completed|shipped|launched|released|"
        r"delivered|migrated|deployed|fixed|resolved)\b",
        re.IGNORECASE)),
    (Kind.ISSUE, re.compile(
        r"\b(?:bug|crash(?:es|ed)?|error|exception|broken|regression|outage|timeouts?|times out|leak|"
        r"doesn't work|does not work|not working|fails?|failing|issue|problem|flaky|stuck|throws?|throwing|"
        r"(?:is|are|gets?|got) (?:slow|down|unavailable|unresponsive)|filled up|ran out of|"
        r"out of (?:disk|memory|space)|alerts? fired|went down|(?:is|are) full|oom(?:-?killed)?|"
        r"blocker\s*:|blocked (?:by|on)|"
        r"keeps? (?:crashing|failing|restarting|evicting|dropping|timing out|hanging|freezing|leaking))\b|"
        # an HTTP status, not any number from 400 to 599: a plural ("502s"), or after what returns one
        r"\b[45]\d\ds\b|\b[45]\d\d\s+(?:errors?|responses?)\b|"
        r"\b(?:returned|returns|returning|answered|answers|served|serves|threw|got|gets|getting|http|status)"
        r"\s+(?:an?\s+)?[45]\d\d\b",
        re.IGNORECASE)),
    (Kind.TASK, re.compile(
        r"\btodo\b|\bto-do\b|\baction item\b|\bnext step\b|\b(?:we|i|you)\s+(?:still\s+)?(?:need|have|has|"
        r"must|should)\s+to\b|\bremind me to\b|\bdon't forget to\b|\bplease\s+(?:add|write|fix|review|"
        r"update|check|move|create|send)\b|\b(?:we|i)\s+(?:will|'ll)\s+(?:need|have) to\b|\bbefore\s+"
        rf"(?:{WEEKDAYS}|the end of|eod|tomorrow)",
        re.IGNORECASE)),
    (Kind.HEURISTIC, re.compile(
        r"\b(?:rule of thumb|the trick is|best practice|it helps to|always\s+\w+|pro tip|tip:|"
        r"works (?:better|best|well) (?:than|when|if|for)|the key is to|make sure to)\b",
        re.IGNORECASE)),
    (Kind.FACT, re.compile(
        r"\b(?:i am|i'm|i work|i live|i lead|i manage|i run|i own|i have|we have|we use|we run|we're on|"
        r"we're\s+\w+ing|we are\s+\w+ing|"
        r"we are on|our\s+\w+(?:\s+\w+)?\s+(?:is|are|runs|uses)|"
        r"my\s+\w+(?:\s+\w+){0,2}\s+(?:is|are|was|were|wants|lives|works|has|had|likes|moved|studies|runs|"
        r"leaves|departs|arrives|lands|starts|begins|ends)|"
        r"the\s+\w+(?:\s+\w+)?\s+(?:is|are|was|were|has|uses|runs|moved|moves|starts|begins|ends|showed|"
        r"had))\b",
        re.IGNORECASE)),
]

_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d")
_LESSON = re.compile(r"^\s*(?:lessons? learned|takeaway|key takeaway|learning|note to self)\s*[:\-]|"
                     r"\b(?:next time|in (?:the )?future),?\s+(?:we|i)\s+(?:should|will|must)\b", re.IGNORECASE)
_POSITIVE = re.compile(r"\b(?:worked|succeeded|passed|fixed|resolved|solved|finished|shipped|success|"
                       r"completed|helped|improv\w+|faster)\b", re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(?:failed|didn't work|did not work|broke|crash\w*|regress\w*|slower|locked|"
                       r"blocked|timed out|hung)\b",
                       re.IGNORECASE)


def clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE.split(text):
        part = clean(part)
        if len(part) >= 3:
            out.append(part)
    return out


def dates(text: str) -> list[str]:
    return _dedupe(clean(m.group(0)) for m in _DATE.finditer(text))


def numbers(text: str) -> list[str]:
    spans = [m.span() for m in _DATE.finditer(text)] + [m.span() for m in _IDENTIFIER.finditer(text)]
    out = []
    for m in _NUMBER.finditer(text):
        if not any(a <= m.start() < b for a, b in spans):
            out.append(clean(m.group(0)))
    return _dedupe(out)


def paths(text: str) -> list[str]:
    urls = [(m.span(), m.group(0).rstrip(".,;:!?")) for m in _URL.finditer(text)]
    inside = [span for span, _ in urls]
    found = (m for run in _RUN.finditer(text) if run.end() - run.start() <= _LONGEST_PATH
             for m in _PATH.finditer(text, run.start(), run.end()))
    local = [m.group(0) for m in found if not any(a <= m.start() < b for a, b in inside)]
    return _dedupe([u for _, u in urls] + local)


def identifiers(text: str) -> list[str]:
    return _dedupe([*(m.group(0) for m in _IDENTIFIER.finditer(text)), *(m.group(0) for m in _HOST.finditer(text))])


def noun_phrases(text: str) -> list[str]:
    """Systems named by common nouns after a determiner ("the billing service", "our session cache"), lower
    case: an entity that two sessions can share without a capitalised name."""
    found = []
    for m in _NOUN_PHRASE.finditer(text.casefold()):
        words = m.group(1).split()
        while words and (words[0] in _NOT_MODIFIERS or words[0] in _STOP):
            words = words[1:]
        if len(words) >= 2:
            found.append(" ".join(words))
    return _dedupe(found)


def _dedupe(items: object) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:  # type: ignore[attr-defined]
        key = str(item).casefold()
        if key not in seen:
            seen[key] = str(item)
    return list(seen.values())


_LIST_ITEM = re.compile(r"(?:^|\n)[ \t]*(?:[-*•–]|\d+[.)])[ \t]*$")


def _opens_sentence(text: str, start: int) -> bool:
    """The text at ``start`` opens a sentence (or a line, a list item, or a quote at one)."""
    before = text[:start].rstrip(" \t\"'“‘([")
    return not before or before[-1] in ".!?:;\n" or _LIST_ITEM.search(before) is not None


def named_entities(text: str) -> list[str]:
    """Capitalised names (not sentence-initial function words), versioned products, identifiers, paths."""
    found: list[str] = []
    found += [f"{m.group(1)} {m.group(2)}" for m in _VERSIONED.finditer(text)
              if m.group(1).casefold() not in _COMMON_CAPS and m.group(1).casefold() not in MONTHS.split("|")]
    found += identifiers(text)
    found += paths(text)
    found += noun_phrases(text)
    for m in _CAPS_RUN.finditer(text):
        if text[m.end() : m.end() + 1] == "'" and text[m.end() + 1 : m.end() + 2] in ("t", "r", "v", "l", "d"):
            continue  # a contraction such as Don't / We're
        words = [w for w in m.group(0).split()
                 if w.casefold().strip("'") not in _COMMON_CAPS and w.casefold().rstrip("s") not in _COMMON_CAPS]
        opens = _opens_sentence(text, m.start())
        while opens and words and words[0].casefold() in _LEADING:  # "In hindsight", not "at Two Sigma"
            words = words[1:]
        if not words:
            continue
        name = " ".join(words)
        if len(name) < 2 or name.isdigit() or _IDENTIFIER.fullmatch(name):
            continue
        if any(name in f for f in found):
            continue
        found.append(name)
    return _dedupe(found)


def subject_of(sentence: str) -> str | None:
    m = _SUBJECT.search(sentence)
    if m is None:
        return None
    subject = m.group(1).casefold()
    return None if subject in {"it", "this", "that", "one", "thing"} else subject


@dataclass
class Values:
    asserted: list[str] = field(default_factory=list)
    negated: list[str] = field(default_factory=list)


def values_of(sentence: str) -> Values:
    """Dates and numbers a sentence asserts, and the ones it explicitly negates ("not December 15")."""
    negated = _dedupe(clean(m.group(1)) for m in _NEGATED_VALUE.finditer(sentence))
    neg_keys = {n.casefold() for n in negated}
    asserted = [v for v in dates(sentence) + numbers(sentence) if v.casefold() not in neg_keys]
    return Values(asserted=_dedupe(asserted), negated=negated)


@dataclass
class CueMatch:
    kind: Kind
    sentence: str
    attributes: dict[str, object]


def classify(sentence: str) -> CueMatch | None:
    """The first matching cue, in priority order: anti-pattern, then preference … fact. A fresh match each call
    (its attributes are the caller's to change); the matching itself is remembered for the most recent
    sentences of up to ``_REMEMBERED_CHARS``, since fold and extract both classify every sentence of a message
    (and fold a session's again when it folds the session again), at some 70 µs a sentence."""
    found = _classified(sentence) if len(sentence) <= _REMEMBERED_CHARS else _classified.__wrapped__(sentence)
    return None if found is None else CueMatch(found.kind, found.sentence, dict(found.attributes))


_REMEMBERED_CHARS = 1000
"""Longer sentences are classified each time: the memory holds at most 8,192 sentences of this size."""


@lru_cache(maxsize=8192)
def _classified(sentence: str) -> CueMatch | None:
    probe = sentence.translate(APOSTROPHES)  # the cues read it; spans are the original's

    def group(m: re.Match[str], name: str) -> str | None:
        start, end = m.span(name)
        return sentence[start:end] if start >= 0 else None

    for rx in (_ANTI, _ANTI_MISTAKE):
        m = rx.search(probe)
        if m and m.group("why"):
            better = group(m, "better")
            attrs: dict[str, object] = {
                "pattern": clean(group(m, "pattern") or "").rstrip(",;"),
                "why_bad": clean(group(m, "why") or "").rstrip(",;."),
                "better_alternative": clean(better).rstrip(".") if better else None,
                "occurrences": 1,
            }
            return CueMatch(Kind.ANTI_PATTERN, sentence, attrs)
    if probe.rstrip().endswith("?"):
        return None  # a question asks; it states no fact, preference, issue or task of its own
    spoken = _QUOTED.sub(" ", probe)  # what someone else said, quoted, is not the speaker's own statement
    if _LESSON.search(spoken):
        return CueMatch(Kind.HEURISTIC, sentence, {"occurrences": 1, "successes": 0})
    for kind, rx in _CUES:
        if rx.search(spoken):
            attrs = {}
            if kind is Kind.OUTCOME:
                attrs["success"] = bool(_POSITIVE.search(probe)) and not _NEGATIVE.search(probe)
            if kind is Kind.HEURISTIC:
                attrs.update({"occurrences": 1, "successes": 0})
            return CueMatch(kind, sentence, attrs)
    return None


_DENIAL = re.compile(r"\b(?:never|not|no|without|nothing|zero)\b|n't\b", re.IGNORECASE)


def reports_failure(text: str) -> bool:
    """The text says something failed ("failed", "didn't work", "broke", "timed out"...) and nothing worked: a
    failure word it denies ("has never crashed", "no more timeouts" within the three words before it) or beside a
    success ("fixed the crashes") is no failure. What an outcome must say to be read as a failure, whoever
    labelled it."""
    probe = text.translate(APOSTROPHES)
    if _POSITIVE.search(probe):
        return False
    return any(not _DENIAL.search(" ".join(probe[:m.start()].split()[-3:])) for m in _NEGATIVE.finditer(probe))


_STOP = frozenset(
    "i me my we our you your it its a an the to of in on for with and or but so that this these those is are "
    "was were be been am do does did have has had will would should could can may might must not no more than "
    "really very just also please always never like prefer love want rather each every some any all which "
    "who what when how so quick stay now actually instead anymore again too still there here".split()
)


def topic_of(text: str, max_words: int = 3) -> str:
    """A short stable topic key for a preference: the content words after the cue verb, without the first
    one when there are several, which is usually the preferred value itself ('dark mode in the editor' and
    'light mode in the editor' share 'mode editor'; 'Go for the ingestion service' gives 'ingestion service')."""
    m = re.search(r"\b(?:prefer|like|love|enjoy|hate|dislike|want|use)(?:s|d|ed|red)?\s+(.*)|"
                  r"\b(?:rather|fan of|favou?rite)\s+(.*)", text, re.IGNORECASE)
    tail = (m.group(1) or m.group(2)) if m else text
    tail = re.split(r"[,.;:!?]|\b(?:so|because|since|but|and|when|if|more than|rather than|over)\b", tail,
                    maxsplit=1, flags=re.IGNORECASE)[0]
    words = [w for w in re.findall(r"[a-z][a-z0-9+#\-]*", tail.casefold()) if w not in _STOP]
    if len(words) >= 2:
        words = words[1:]
    return " ".join(words[:max_words]) or "general"
