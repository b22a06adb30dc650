"""Canonical terms: what the write guard compares when the wording differs.

A text's terms are its content words, stemmed (Snowball English), with one word standing for each group of
common synonyms, numbers written without thousands separators, and words that only carry a speaker's stance
("I prefer", "we decided", "let's", "TODO") left out: "Session cache entries are pickled now" and "use pickle
for the session cache" share the terms ``pickl``, ``session``, ``cach``. A *specific* term names something
exact (a number, a code): an erased value is its specific terms coming back.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from altm.core import normalise_text

_WORD = re.compile(r"[a-z0-9]+")
_THOUSANDS = re.compile(r"(?<=\d)[,.](?=\d{3}\b)")

_STOP_WORDS = """
a an the and or but to of in on at for with by from into onto as than then so if is are was were be been being
am it its this that these those there here i me my mine we us our ours you your yours he him his she her hers
they them their theirs s t m ll re ve d do does did done doing have has had having will would can could
shall should may might must also just now still only very really too quite all any some such own same
use uses using used user users team someone anyone everyone people
prefer prefers preferred preferring preference like likes liked love loves rather want wants wanted
decide decides decided decision agree agrees agreed plan plans planned todo let lets go goes going gone gonna
need needs needed fine okay ok good great simple simpler easy easier ever again today tonight
make makes made get gets got keep keeps kept"""
"""Words that say nothing about *what* a statement is about. "keep" is here and not among the storage words:
"keep the tests green" is not about storing."""

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


def terms(text: str) -> frozenset[str]:
    """The text's canonical content terms (see the module's docstring)."""
    words = _WORD.findall(_THOUSANDS.sub("", normalise_text(text)))
    return frozenset(t for t in (_term(w) for w in words) if t is not None)


_YEAR = re.compile(r"^(?:19|20)\d\d$")


def specific(term: str) -> bool:
    """A term that names something exact: three characters or more with a digit, and not a year ("2026" and
    "5" are in too many texts to tell an erased value from a date or a count)."""
    return len(term) >= 3 and any(c.isdigit() for c in term) and not _YEAR.match(term)
