"""Canonical terms: what the write guard compares when the wording differs.

A text's terms are its content words, stemmed (Snowball English), with one word standing for each group of
common synonyms, numbers written without thousands separators, and words that only carry a speaker's stance
("I prefer", "we decided", "let's", "TODO") left out: "Session cache entries are pickled now" and "use pickle
for the session cache" share the terms ``pickl``, ``session``, ``cach``. A *specific* term names something
exact (a number, a code): an erased value is its specific terms coming back.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

from altm.core import normalise_text, strip_format

_WORD = re.compile(r"[a-z0-9]+")
_THOUSANDS = re.compile(r"(?<=\d)[,.](?=\d{3}\b)")
_KILO = re.compile(r"^(\d+)k$")
# a match starts at a word's start, or at a non-ASCII character that is no letter (after the match before it):
# the same matches as ``\w*[^\x00-\x7f]\w*``, which started a scan to a long ASCII word's end at each letter
_ACCENTED = re.compile(r"(?:(?<!\w)|(?=[^\w\x00-\x7f]))\w*[^\x00-\x7f]\w*")
_SENTENCE = re.compile(r"(?:^|(?<!\bDr)(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bSt)(?<!\bProf)(?<!\bApt)[.!?;:]\s+|\n)"
                       r"\s*(?:[-*•–]\s+|\d+[.)]\s+)?[\"'“‘«(\[]*")
_CAPITALISED = re.compile(r"(?<![\w'’])[^\W\d_][\w'’\-]*")
_NOT_NAMES = frozenset("""
i i'm i've i'd i'll dr mr mrs ms mx st apt prof
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri sat sun
""".split())
"""Capitalised words that name no one: titles and abbreviations, months and weekdays (in too many texts)."""

_STOP_WORDS = """
a an the and or but to of in on at for with by from into onto as than then so if is are was were be been being
am it its this that these those there here i me my mine we us our ours you your yours he him his she her hers
they them their theirs s t m ll re ve d do does did done doing have has had having will would can could
shall should may might must also just now still only very really too quite all any some such own same
use uses using used user users team someone anyone everyone people
prefer prefers preferred preferring preference like likes liked love loves rather want wants wanted
decide decides decided decision agree agrees agreed plan plans planned todo let lets go goes going gone gonna
need needs needed fine okay ok good great simple simpler easy easier ever again today tonight
make makes made get gets got keep keeps kept
actually correction sorry oops"""
"""Words that say nothing about *what* a statement is about. "keep" is here and not among the storage words:
"keep the tests green" is not about storing. The correction cues ("Actually, ...") are a stance too: every
correction of a subject says them, so an erased correction's cue is no part of what was erased."""

_SYNONYMS = [
    "store stores stored storing save saves saved saving persist persists persisted persisting put puts "
    "putting hold holds holding stash stashed",
    "big large huge giant massive enormous",
    "single one",
    "entire whole every each",
    "run runs ran running execute executes executed executing process processes processed processing "
    "perform performs performed",
    "skip skips skipped skipping bypass bypasses bypassed omit omits omitted without forgo no "
    "little few lack lacks lacking insufficient barely hardly",
    "ignore ignores ignored ignoring swallow swallows swallowed swallowing silently silent",
    "deploy deploys deployed deploying deployment deployments release releases released releasing ship "
    "ships shipped shipping",
    "mock mocks mocked mocking fake fakes faked faking stub stubs stubbed stubbing",
    "database databases db dbs",
    "restart restarts restarted restarting bounce bounces bounced bouncing reboot reboots rebooted",
    "business working work midday daytime",
    "money currency currencies price prices cash",
    "exception exceptions error errors",
    "kid kids child children",
    "check checks checked checking look looking verify verifies verified",
    "email emails mail e-mail",
    "live lives lived living reside resides resided residing address",
    "salary salaries wage wages earn earns earned pay paid pays income",
    "annual annually yearly year years annum",
    "euro euros eur",
    "street st",
    "code codes pin pins password passwords passcode",
    "door doors entrance",
    "tell tells told telling inform informs informed",
]

_STEMMER = snowballstemmer.stemmer("english")
_STOP = frozenset(_STEMMER.stemWords(_STOP_WORDS.split())) | frozenset(_STOP_WORDS.split())


def _canonical_map() -> dict[str, str]:
    out: dict[str, str] = {}
    for group in _SYNONYMS:
        words = group.split()
        head = _STEMMER.stemWord(words[0])
        for word in words:
            out[word] = head
            out[_STEMMER.stemWord(word)] = head
    return out


_CANONICAL = _canonical_map()
_COMMON = frozenset(_CANONICAL.values())


@lru_cache(maxsize=65536)
def _term(word: str) -> str | None:
    if word in _STOP:
        return None
    if word in _CANONICAL:
        return _CANONICAL[word]
    stem = str(_STEMMER.stemWord(word))
    if stem in _STOP:
        return None
    return _CANONICAL.get(stem, stem)


def _words(plain: str) -> list[str]:
    """The words of a normalised text, and a second form of some: "85k" is also 85000, and a word with a letter
    outside a-z ("zoë") is also its form without accents ("zoe"), beside the parts the first form keeps (what
    tombstones made before the second forms hold)."""
    words = _WORD.findall(plain)
    words += [f"{m.group(1)}000" for w in words if (m := _KILO.match(w))]
    words += [folded for w in _ACCENTED.findall(plain) if (folded := _folded(w)).isascii() and folded.isalnum()]
    return words


def _folded(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def terms(text: str) -> frozenset[str]:
    """The text's canonical content terms (see the module's docstring)."""
    return frozenset(t for t in (_term(w) for w in _words(_THOUSANDS.sub("", normalise_text(text)))) if t is not None)


def weak(term: str) -> bool:
    """A term of time or novelty ("last", "week", "new"): in too many texts to tell, beside a name, an erased
    message from another about the same person."""
    return term in _WEAK


_WEAK = frozenset(t for t in (_term(w) for w in """last next past week weeks weekend month months day days night
nights morning evening afternoon yesterday tomorrow time times ago new soon recently early late later year years
first""".split()) if t is not None)


_GREETING = re.compile(r"(?:^|\W)(?:hey|hi|hello|hiya|dear|thanks|thank you|thx|yeah|yes|yep|yup|wow|oh|sure|"
                       r"definitely|absolutely|congrats|congratulations|well|ok|okay|haha|aw+|bye|morning|night)"
                       r"\W*$", re.IGNORECASE)


_APPOSITION = re.compile(r"\b(?:my|our|his|her|their|your|the|a|an)(?:\s+[\w'’-]+){1,2},\s*$", re.IGNORECASE)


def _addressed(text: str, m: re.Match[str]) -> bool:
    """The name of whom the message speaks to ("Hey Maria, ...", "Sounds good, John."): the other speaker of a
    conversation is named in every other message, and says nothing of what the message is about. A name after
    a comma that follows whom it names ("for my sister, Maya.") is not spoken to."""
    before, after = text[:m.start()], text[m.end():]
    return bool(_GREETING.search(before[-16:])) or (
        before.rstrip(" ").endswith(",") and (not after or after[0] in ",!?.;:")
        and not _APPOSITION.search(before))


def names(text: str) -> frozenset[str]:
    """The terms of the text's names: words capitalised inside a sentence ("my sister Maya in Leeds"), not the
    first word of one (capitalised anyway), not a title, month or weekday, not an acronym ("AWS", "HR": mostly
    things, not people or places), not a part shorter than three letters ("Wi-Fi"), and not a word the guard
    reads as a common one (a synonym group's, such as "St" for street). Read composed (NFC): a name typed
    decomposed ("E" and a combining accent) was two parts, "E" and "mile", and marked no name."""
    text = strip_format(unicodedata.normalize("NFC", text))  # "Dub\u00adois" is one name, as its terms read it
    firsts = {m.end() for m in _SENTENCE.finditer(text)}
    out: set[str] = set()
    for m in _CAPITALISED.finditer(text):
        word = m.group()
        lower = word.lower()
        if (not word[0].isupper() or m.start() in firsts or word.isupper() or _addressed(text, m)
                or lower in _NOT_NAMES or lower.removesuffix("s") in _NOT_NAMES):
            continue
        parts = _WORD.findall(_folded(normalise_text(word)))
        out.update(t for t in (_term(w) for w in parts if len(w) >= 3) if t is not None and t not in _COMMON)
    return frozenset(out)


_YEAR = re.compile(r"^(?:19|20)\d\d$")


def specific(term: str) -> bool:
    """A term that names something exact: three characters or more with a digit, and not a year ("2026" and
    "5" are in too many texts to tell an erased value from a date or a count)."""
    return len(term) >= 3 and any(c.isdigit() for c in term) and not _YEAR.match(term)
