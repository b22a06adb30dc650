"""The write guard, evaluated by the writer for every proposal (so no writer path can bypass it).

* Tombstones (erased content) apply to every layer. A raw message (L0) is the user's record: it is refused
  only when it *is* erased content coming back (the erased message's own id, on replay or a re-send of the
  turn) or an exact re-send of a distinctive erased text (the same normalised text; see ``MIN_SHINGLES``).
  A derived memory is refused when it is an exact re-send of a distinctive erased text or re-states a long
  erased raw message: it holds at least the threshold share of that message's shingles (pairs of
  consecutive words).
  A derived memory that re-states an erased message *in other words* is refused too: the canonical terms of
  both (stems, synonyms, numbers; see ``_terms``) are compared as keyed hashes. A derived memory
  that carries back something exact the erased message named (a number, a code) with one more of its terms
  re-states it; so does one that carries back one of its names (a person, a place, a street: capitalised
  inside a sentence, not the one the message speaks to) with two more of its terms that are neither names
  nor words of time;
  otherwise, when the erased message named nothing exact, it must share three terms and 65 % of the shorter
  text's terms.
* Anti-patterns apply to derived memories: a derived memory that re-asserts a stored anti-pattern's
  ``pattern`` (without negating it) is refused. Re-asserting is judged on canonical terms and, when the guard
  has a text similarity (the local embedder), on meaning: see :func:`reassertion`. A borderline match is not
  refused but *flagged*: the memory is stored as ``uncertain`` with the anti-pattern as the reason, so it
  lands in the review queue. A raw message is always captured as L0.

Tombstones hold no text: their shingles and terms are compared as keyed hashes (HMAC-SHA256 with a key per
user), so a data dir does not reveal what was erased by reading the tombstones.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, runtime_checkable

import orjson

from altm.core import (
    APOSTROPHES,
    ERASED_BY_ID_PREFIX,
    BuriedContent,
    Layer,
    MemoryUnit,
    Scope,
    capsule,
    normalise_text,
    scene,
)
from altm.pipeline.processors._rules import reports_failure
from altm.pipeline.writer._terms import names, specific, terms, weak
from altm.store import MemoryRow, ShardTx, Tombstone, row_to_memory

_TOKEN = re.compile(r"[^\W_][\w\-]*")
"""A word of the normalised text, in any script ("мой", "код", "4417", "db-01"): letters outside a–z were no
part of one, so a Russian or Greek message was its digits alone (an erased one came back word for word, and
an unrelated message sharing its number was refused)."""
_ASCII_TOKEN = re.compile(r"[a-z0-9][a-z0-9_\-]*")
"""The words tombstones made before the guard read every script were hashed from (see :func:`value_hashes`)."""
_STOP = frozenset("a an the and or to of in on at for with by is are was were be it this that i we you my our "
                  "your its use uses using used".split())
"""Words that say nothing about what a pattern is about ("use pickle for the session cache" is about pickle and
the session cache: "I prefer pickle for the session cache" re-asserts it)."""
_NEGATION = re.compile(r"\b(?:don't|do not|dont|never|avoid(?:s|ed|ing)?|stop(?:s|ped|ping)?|instead of|rather than|"
                       r"not|no longer|no more|shouldn't|should not|mustn't|must not|mistake|bad idea|anti-pattern)\b")
MIN_TOKENS = 3
MIN_SHINGLES = 5
"""An erased text this long (about six words besides stop words) is distinctive, and so is one that names
something specific (a token with a digit, a hyphen or an underscore, or of 12 characters or more: a code, a
number, an identifier). Only a distinctive text refuses an exact re-send ("Sounds good to me." said again in
another session is the user's new message, not the erased one); only a long one is matched by overlap."""
_SPECIFIC = re.compile(r"\d|[-_]|^.{12,}$")


class GuardUnavailable(RuntimeError):
    """The guard could not be evaluated; the proposal must be deferred, never accepted."""


TextSimilarity = Callable[[str, str], float]
"""Cosine similarity of two texts' meanings (the local embedder's; see ``_similarity``)."""


@runtime_checkable
class KeptSimilarity(Protocol):
    """A similarity whose vectors can be kept in the shard the guard judges in (``EmbeddingSimilarity``)."""

    def __call__(self, a: str, b: str) -> float: ...

    def within(self, tx: ShardTx, home: str) -> TextSimilarity: ...

REFUSE_COVER = 0.75
TERMS_ALONE = 3
"""A derived memory holding this share of an anti-pattern's terms (and at least three) re-asserts it."""
REFUSE_SIMILAR = (0.6, 0.65)
"""... and so does one holding 60 % of them whose meaning is at least 0.65 similar."""
FLAG_SIMILAR = ((2, 0.55), (1, 0.7))
"""A borderline match: (terms shared, similarity) pairs from which a memory is flagged for review."""
SPECIFIC_SHARED = 2
NAMED_WITH = 2
RESTATED_TERMS = (3, 0.65)
"""An erased message's terms coming back: one of its specific terms and one more; one of its names and two of
its terms that are neither names nor words of time ("Lumen Health in March" is the employer and a month, not
the erased plan to quit; "Maria ... last week" is a friend's week); otherwise, when it named nothing exact,
three and this share of the shorter text's terms."""


@dataclass(frozen=True)
class GuardVerdict:
    record_id: str  # the tombstone or the anti-pattern it matched
    reason: str
    action: Literal["refuse", "flag"] = "refuse"
    anti_pattern: bool = False  # it re-asserts an anti-pattern (not: it matches erased content)
    statements: tuple[str, ...] = ()  # a capsule's statements, a scene's members, that re-state erased content


_LEAVING_WORD = re.compile(r"[a-z]+")
_NOT_YET = re.compile(r"\bunless\b|\bbefore\s+\w+ing\b")
_CLAUSE = re.compile(r"[;,:.!?]|\b(?:but|while|whereas|which|although|though)\b", re.IGNORECASE)


def negated_about(text: str, pattern: str) -> bool:
    """The text speaks against the pattern: a clause of it that names one of the pattern's terms is negated
    ("…pickled now, which is not slower than JSON" does not speak against pickling). A pattern that itself
    leaves something out ("without an expiry": :func:`leaves_out` counts odd) is spoken against only by a
    clause that leaves out an even number of times ("never … without an expiry", "never … unless"); "never
    expire" leaves the expiry out as the pattern does, and is judged as a possible re-assertion."""
    clauses = clauses_about(text, terms(pattern))
    if leaves_out(pattern) % 2 == 0:
        return any(negates(c) for c in clauses)
    return any((count := leaves_out(c)) and count % 2 == 0 for c in clauses)


def clauses_about(text: str, theirs: frozenset[str]) -> list[str]:
    """The clauses of ``text`` that name one of the terms ``theirs``."""
    return [c for c in _CLAUSE.split(text) if c and terms(c) & theirs]


def leaves_out(text: str) -> int:
    """How often the text negates or leaves something out: negation cues ("don't", "never", "no longer"),
    then, outside those, "unless" (if not), "before" with a gerund (not done yet: "deploy before testing"
    leaves the testing out) and words meaning leaving out ("without", "skip", "no"; the ``skip`` term).
    "Never deploy unless a rollback plan exists" and "don't go camping before checking the forecast" count
    two: they speak against "deploy without a rollback plan" and "go camping without checking the forecast"."""
    folded = text.translate(APOSTROPHES).casefold()
    rest = _NEGATION.sub(" ", folded)
    return (len(_NEGATION.findall(folded)) + len(_NOT_YET.findall(rest))
            + sum(1 for w in _LEAVING_WORD.findall(rest) if "skip" in terms(w)))


def negates(text: str) -> bool:
    """The text speaks against something (don't, never, avoid, instead of...)."""
    return bool(_NEGATION.search(text.translate(APOSTROPHES).casefold()))


def tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _TOKEN.findall(normalise_text(text)) if t not in _STOP)


def value_hash(key: bytes, text: str, *, words: re.Pattern[str] = _TOKEN) -> str:
    """The keyed hash an exact re-send is recognised by: the text's words in order (case, spacing and
    punctuation do not make it another text)."""
    joined = " ".join(words.findall(normalise_text(text)))
    return hmac.new(key, joined.encode(), hashlib.sha256).hexdigest()


def value_hashes(key: bytes, text: str) -> tuple[str, ...]:
    """The text's :func:`value_hash`, and the one a tombstone made before the guard read every script holds
    for it, where the two differ (a text with letters outside a–z): such a tombstone still refuses the text."""
    now = value_hash(key, text)
    if normalise_text(text).isascii():
        return (now,)
    before = value_hash(key, text, words=_ASCII_TOKEN)
    return (now,) if before == now else (now, before)


def shingles(text: str, *, words: re.Pattern[str] = _TOKEN) -> frozenset[str]:
    """Pairs of consecutive guard tokens (stop words dropped): word order is what tells a re-statement from
    chit-chat that happens to share its words."""
    found = [t for t in words.findall(normalise_text(text)) if t not in _STOP]
    return frozenset(f"{a} {b}" for a, b in itertools.pairwise(found))


def distinctive(text: str) -> bool:
    """Specific enough that saying it again is the erased content coming back (see ``MIN_SHINGLES``)."""
    return len(shingles(text)) >= MIN_SHINGLES or any(_SPECIFIC.search(t) for t in tokens(text))


def keyed_shingles(key: bytes, text: str, *, words: re.Pattern[str] = _TOKEN) -> frozenset[str]:
    """The text's shingles as keyed hashes (what a tombstone keeps instead of the text)."""
    return frozenset(hmac.new(key, s.encode(), hashlib.sha256).hexdigest()[:24] for s in shingles(text, words=words))


def compared_shingles(key: bytes, text: str) -> frozenset[str]:
    """What a memory's shingles are compared with tombstones by: :func:`keyed_shingles`, and for a text with
    letters outside a–z also the ones a tombstone made before the guard read every script would hold."""
    now = keyed_shingles(key, text)
    return now if normalise_text(text).isascii() else now | keyed_shingles(key, text, words=_ASCII_TOKEN)


def keyed_terms(key: bytes, text: str) -> frozenset[str]:
    """The text's canonical terms as keyed hashes, each marked with its class: ``s:`` a specific term (a
    number, a code), ``n:`` a name (see :func:`~altm.pipeline.writer._terms.names`), ``w:`` a word of time
    or novelty ("last", "week"), ``t:`` the others."""
    named = names(text)

    def mark(term: str) -> str:
        return "s" if specific(term) else "n" if term in named else "w" if weak(term) else "t"

    return frozenset(f"{mark(t)}:{hmac.new(key, t.encode(), hashlib.sha256).hexdigest()[:24]}" for t in terms(text))


TermMarks = Mapping[str, str]
"""An erased message's term hashes (without their mark) and the mark of each: see :func:`term_marks`."""


def term_marks(erased: Iterable[str]) -> TermMarks:
    """What :func:`restates_terms` and :func:`restates_value` compare with, made once per tombstone: terms are
    matched by their hash alone (a name of the erased message may be lower case in the candidate), and the
    erased message's mark says what each one is."""
    return {h[2:]: h[0] for h in erased}


def restates_terms(candidate: frozenset[str], marks: TermMarks, *, whole: bool = False) -> bool:
    """The candidate carries an erased message's content back in other words (see the module's docstring);
    ``marks``: the erased message's, from :func:`term_marks`. ``whole``: the share counts against the erased
    message's terms, not the shorter text's (a topic label of three words restates no longer message by holding
    three of its words; its specific terms and names still count as in a content)."""
    if not candidate or not marks:
        return False
    shared = [marks[h[2:]] for h in candidate if h[2:] in marks]
    if len(shared) >= SPECIFIC_SHARED and "s" in shared:
        return True
    # a word of time is one whichever side says so (a tombstone older than the w: mark has it as t:)
    strong = sum(marks[h[2:]] in "st" and h[0] != "w" for h in candidate if h[2:] in marks)
    if "n" in shared and strong >= NAMED_WITH:
        return True
    if "s" in marks.values():  # what it named exactly is what was erased: the rest is its topic
        return False
    least, share = RESTATED_TERMS
    return len(shared) >= least and len(shared) / (len(marks) if whole else min(len(candidate), len(marks))) >= share


def restates_value(value: frozenset[str], marks: TermMarks) -> bool:
    """A value (a number, a date, a path: a capsule's "Numbers and dates" item) that is made of an erased
    message's terms alone, and is exact (one of its specific terms) or two words that are not of time ("March
    21", not "next month"): said on its own, it is that message's value coming back ("4417" after "the gate
    code is 4417")."""
    if not value or any(h[2:] not in marks for h in value):
        return False
    return any(marks[h[2:]] == "s" for h in value) or sum(h[0] != "w" for h in value) >= 2


def reassertion(candidate: str, pattern: str, similarity: TextSimilarity | None
                ) -> tuple[Literal["refuse", "flag"], str] | None:
    """Whether a derived memory that does not speak against an anti-pattern (the caller checks that, see
    :func:`negated_about`) re-asserts it: refused on terms alone or on terms and meaning, flagged for review
    when only close; None when it does not. A pattern that is about leaving something out ("without a
    rollback plan") is re-asserted only by a text that leaves it out too. Without a similarity, only the terms
    decide (and nothing is flagged)."""
    mine, theirs = terms(candidate), terms(pattern)
    if any(leaves_out(c) % 2 for c in clauses_about(candidate, theirs)):
        mine = mine | {"skip"}  # "never expire" leaves the expiry out as "without an expiry" does
    if not theirs or ("skip" in theirs and "skip" not in mine):
        return None
    shared = len(mine & theirs)
    cover = shared / len(theirs)
    if shared >= TERMS_ALONE and cover >= REFUSE_COVER:  # a two-term pattern is too easily met by chance
        return "refuse", f"{shared} of its {len(theirs)} terms"
    if similarity is None or shared == 0:
        return None
    similar = similarity(candidate, pattern)
    least_cover, least_similar = REFUSE_SIMILAR
    if shared >= 2 and cover >= least_cover and similar >= least_similar:  # terms and meaning
        return "refuse", f"{shared} of its {len(theirs)} terms, similarity {similar:.2f}"
    if any(shared >= n and similar >= s for n, s in FLAG_SIMILAR):
        return "flag", f"{shared} of its {len(theirs)} terms, similarity {similar:.2f}"
    return None


def restates(candidate: frozenset[str], erased: frozenset[str], threshold: float, *, specific: bool) -> bool:
    """The candidate holds at least ``threshold`` of an erased text's shingles (a derived memory that quotes or
    closely paraphrases it). The erased text must be long, or specific and at least two shingles: a short
    generic one matches nothing but itself."""
    if len(erased) < (2 if specific else MIN_SHINGLES):
        return False
    return len(candidate & erased) / len(erased) >= threshold


_T = TypeVar("_T")


class GuardKeys(Protocol):
    """Users' guard keys by scope home, from the deployment's key store (:class:`altm.bus.sealing.KeyStore`):
    the same in every process, so the tombstones a shard restored from the log carries over match as they did
    where they were made."""

    def guard_key(self, home: str, adopt: bytes | None = None) -> bytes: ...

    def find_guard_key(self, home: str) -> bytes | None: ...


def guard_key_of(tx: ShardTx, home: str, keys: GuardKeys | None) -> bytes:
    """The guard key of ``home`` in this shard (taken from ``keys`` on first use; random without them). A key
    store that cannot answer defers the proposal (:class:`GuardUnavailable`): a random key instead would make
    tombstones no other shard can match."""
    if keys is None:
        return tx.guard_key(home)
    return tx.guard_key(home, make=lambda: _from_store(home, lambda: keys.guard_key(home)))


def held_guard_key(tx: ShardTx, home: str, keys: GuardKeys | None) -> bytes | None:
    """The guard key of ``home`` this shard or the key store already holds (kept here then), never a new one:
    None when nothing of the user was buried anywhere."""
    held = tx.existing_guard_key(home)
    if held is not None or keys is None:
        return held
    found = _from_store(home, lambda: keys.find_guard_key(home))
    return None if found is None else tx.guard_key(home, make=lambda: found)


def _from_store(home: str, read: Callable[[], _T]) -> _T:
    try:
        return read()
    except Exception as exc:
        raise GuardUnavailable(f"the guard key of {home} could not be read from the key store: {exc}") from exc


def guard_key_id(key: bytes) -> str:
    """Which guard key hashed a tombstone, without revealing it."""
    return hmac.new(key, b"altm guard key id", hashlib.sha256).hexdigest()[:16]


def bury(tx: ShardTx, row: MemoryRow, *, reason: str, at: str, keys: GuardKeys | None = None,
         erasure_id: str | None = None, forgotten_by: str | None = None) -> BuriedContent:
    """Leave a tombstone for ``row`` (erased or forgotten): its id, its hash and its keyed shingle hashes, and
    the erasure that made it (its proposal's id). Returns it as the log carries it (see :class:`altm.core.Burial`)."""
    key = guard_key_of(tx, f"{row['tenant_id']}/{row['workspace_id']}/{row['user_id']}", keys)
    content = row["content"]
    value, shingled, termed = value_hash(key, content), keyed_shingles(key, content), keyed_terms(key, content)
    special = distinctive(content)
    tid = tx.tombstone(row, reason=reason, at=at, value_hash=value, shingle_hashes=shingled, term_hashes=termed,
                       distinctive=special, erasure_id=erasure_id, forgotten_by=forgotten_by)
    return BuriedContent(tombstone_id=tid, agent_id=row["agent_id"], memory_id=row["memory_id"], layer=row["layer"],
                         value_hash=value, shingle_hashes=tuple(sorted(shingled)), term_hashes=tuple(sorted(termed)),
                         distinctive=special, reason=reason, at=at, erasure_id=erasure_id,
                         forgotten_by=forgotten_by, forgotten_reason=reason if forgotten_by is not None else None)


def hash_legacy_tombstones(tx: ShardTx, *, at: str, keys: GuardKeys | None = None) -> int:
    """Give tombstones written before version 6 their keyed hashes and blank their text."""
    legacy = tx.legacy_tombstones()
    for tombstone_id, home, text in legacy:  # the normalised text hashes as the content it came from
        key = guard_key_of(tx, home, keys)
        tx.hash_tombstone(tombstone_id, value_hash=value_hash(key, text), shingle_hashes=keyed_shingles(key, text),
                          term_hashes=keyed_terms(key, text), distinctive=distinctive(text), at=at)
    return len(legacy)


def matches(candidate: str, reference: str, threshold: float) -> bool:
    """Containment either way (normalised), or token overlap ≥ threshold of the smaller token set."""
    a, b = normalise_text(candidate), normalise_text(reference)
    if not a or not b:
        return False
    if (len(b) >= 12 and b in a) or (len(a) >= 12 and a in b):
        return True
    ta, tb = tokens(a), tokens(b)
    if min(len(ta), len(tb)) < MIN_TOKENS:
        return False
    return len(ta & tb) / min(len(ta), len(tb)) >= threshold


class WriteGuard:
    """``similarity`` (the local embedder's) lets the guard judge anti-patterns by meaning too; without it,
    canonical terms alone decide."""

    def __init__(self, threshold: float = 0.8, similarity: TextSimilarity | None = None) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("the guard's overlap threshold is in (0, 1]")
        self.threshold = threshold
        self.similarity = similarity

    def check(self, tx: ShardTx, mem: MemoryUnit) -> GuardVerdict | None:
        try:
            return self._tombstone(tx, mem) or self._attributes_erased(tx, mem) or self._anti_pattern(tx, mem)
        except Exception as exc:  # fail closed: a guard that cannot decide must not let the write through
            raise GuardUnavailable(f"write guard could not be evaluated: {type(exc).__name__}: {exc}") from exc

    def _attributes_erased(self, tx: ShardTx, mem: MemoryUnit) -> GuardVerdict | None:
        """An atom's free-text attributes (a model writes its subject, pattern, why it is bad, what is better)
        judged as its content is: erased words in them came back as surely as in the content. So is a scene's
        anchor, the name its header carries (a graph model names an entity in words of its own: "Maya's nursing
        job in Leeds" came back in a scene's header after the message that said so was erased)."""
        if mem.layer not in (Layer.L2, Layer.L3) or tx.existing_guard_key(mem.scope.home) is None:
            return None
        anchor = mem.attributes.get("anchor")
        texts = _free_text(mem) if mem.layer is Layer.L2 else (
            [anchor] if is_scene(mem) and isinstance(anchor, str) and anchor.strip() else [])
        for text in texts:  # a short label shares all its few words with many a message: see ``whole``
            found = self._tombstone(tx, mem.model_copy(update={"content": text}), label=True)
            if found is not None:
                return found
        return None

    def _tombstone(self, tx: ShardTx, mem: MemoryUnit, *, label: bool = False) -> GuardVerdict | None:
        key = tx.existing_guard_key(mem.scope.home)
        if key is None:  # nothing of this user was ever erased or forgotten with a tombstone
            return None
        # an L0 id is the message itself; a derived memory's id names what it is about (a session, a scene),
        # which may well be formed again from what was not erased
        own = tx.tombstone_of_memory(mem.scope, mem.memory_id) if mem.layer is Layer.L0 else None
        if own is not None:
            return _erased(*own)
        live: LiveCopies | None = None  # read only when something matches (see _live_copies)

        def copied(erased_hash: str, tombstone_id: str) -> bool:
            nonlocal live
            if live is None:
                live = _live_copies(tx, mem, key)
            return _copied_before(tx, live, erased_hash, tombstone_id)

        for mine_hash in value_hashes(key, mem.content):
            exact = tx.tombstone_of_value(mem.scope, mine_hash)
            if exact is not None and exact[2] and not (mem.layer is not Layer.L0 and copied(mine_hash, exact[0])):
                return _erased(exact[0], exact[1])
        if mem.layer is Layer.L0:
            return None
        # against what the user said, not against erased derived memories: those are mostly template (a
        # session capsule's "Session s1 (3 messages, …)") and would refuse every new memory of the same form
        mine = compared_shingles(key, mem.content)
        if is_capsule(mem) or _members_apart(mem):  # judged a statement (a member) at a time: see _statements
            found_in = capsule.statements(mem.content) if is_capsule(mem) else [
                capsule.Statement("", line) for line in scene.members(mem.content)]
            parts = [(s, keyed_terms(key, s.text)) for s in found_in]
            tombs = tx.tombstones(mem.scope, raw_only=True, sharing=_sharing(mine, *(t for _, t in parts)))
            return self._statements(mem, mine, parts, tombs, copied)
        my_terms = keyed_terms(key, mem.content)
        # only a tombstone that shares a shingle or a term with it can be re-stated (see restates, restates_terms)
        for tomb in tx.tombstones(mem.scope, raw_only=True, sharing=_sharing(mine, my_terms)):
            if (restates(mine, tomb.shingle_hashes, self.threshold, specific=tomb.distinctive)
                    or restates_terms(my_terms, term_marks(tomb.term_hashes), whole=label)) \
                    and not copied(tomb.value_hash, tomb.tombstone_id):
                return _erased(tomb.tombstone_id, tomb.reason)
        return None

    def _statements(self, mem: MemoryUnit, mine: frozenset[str],
                    parts: Sequence[tuple[capsule.Statement, frozenset[str]]], tombs: Sequence[Tombstone],
                    copied: Callable[[str, str], bool]) -> GuardVerdict | None:
        """A capsule is its session's sentences, each extracted on its own, and a scene its member atoms, each
        judged when it was stored: one that re-states an erased message in other words is named in the verdict
        (the writer leaves it out, see ``ops.memory``), where judging the whole text let a long capsule hold most
        words of any short message ("Long time no see!") and refused the session's decisions with it, and let a
        scene, whose every line names its anchor, gather an erased message's terms a line at a time. A value
        of a capsule's numbers, dates and paths is left out when it is made of an erased message's terms alone
        (see :func:`restates_value`). A quote (shingles) is judged on the whole text. ``parts``: its statements
        (members), each with its keyed terms."""
        left_out: dict[str, str] = {}
        first: tuple[str, str] | None = None
        for tomb in tombs:
            if restates(mine, tomb.shingle_hashes, self.threshold, specific=tomb.distinctive) \
                    and not copied(tomb.value_hash, tomb.tombstone_id):
                return _erased(tomb.tombstone_id, tomb.reason)
            marks = term_marks(tomb.term_hashes)
            found = [s.text for s, terms_of in parts if s.text not in left_out and (
                restates_value(terms_of, marks) if s.value else restates_terms(terms_of, marks))]
            if found and not copied(tomb.value_hash, tomb.tombstone_id):
                left_out.update(dict.fromkeys(found, tomb.tombstone_id))
                first = first or (tomb.tombstone_id, tomb.reason)
        if first is None:
            return None
        verdict = _erased(*first)
        return GuardVerdict(verdict.record_id, verdict.reason, statements=tuple(left_out))

    def reasserts(self, tx: ShardTx, mem: MemoryUnit, *, excluding: frozenset[str] = frozenset(),
                  only: frozenset[str] | None = None) -> GuardVerdict | None:
        """Only the anti-pattern half of :meth:`check` (a stored memory judged again when an anti-pattern is
        stored after it), not against the anti-patterns ``excluding`` names (a reviewer approved it past them);
        with ``only``, against those anti-patterns alone."""
        try:
            return self._anti_pattern(tx, mem, excluding, only)
        except Exception as exc:  # fail closed, as check does
            raise GuardUnavailable(f"write guard could not be evaluated: {type(exc).__name__}: {exc}") from exc

    def _anti_pattern(self, tx: ShardTx, mem: MemoryUnit, excluding: frozenset[str] = frozenset(),
                      only: frozenset[str] | None = None) -> GuardVerdict | None:
        """Refused (or held) when it re-asserts a stored anti-pattern. Not judged: raw messages, anti-patterns
        themselves, and a failed outcome: "I tried X and it locked the table" is the evidence why X is an
        anti-pattern, not a recommendation of X (refusing it lost exactly that, and only when the anti-pattern
        happened to be stored first: the state depended on arrival order). A scene re-asserts one when one of
        its member atoms does: its whole text gathered a pattern's terms a line at a time, and the anti-pattern's
        own atom among its members read as the whole scene speaking against it."""
        if not _judged(mem):
            return None
        def stored(scope: Scope) -> list[tuple[str, str]]:
            # a persona facet is the user's, recalled by every agent: judged against every agent's anti-patterns
            return [(mid, attrs) for mid, attrs in tx.anti_patterns(scope, whole_user=mem.layer is Layer.L4)
                    if mid not in excluding and (only is None or mid in only)]

        patterns = stored(mem.scope)
        if not patterns:  # most agents: a scene's members are not read
            return None
        if is_scene(mem):  # each member atom as it would be judged now (its evidence names them, however its
            # lines split); a text whose lines are not its members one to one is judged whole as well
            verdicts = [v for atom in _members(tx, mem) if _judged(atom) and (v := self._against(
                tx, atom, patterns if atom.scope == mem.scope else stored(atom.scope))) is not None]
            if not _members_apart(mem) and (whole := self._against(tx, mem, patterns)) is not None:
                verdicts.append(whole)
            return next((v for v in verdicts if v.action == "refuse"), verdicts[0] if verdicts else None)
        return self._against(tx, mem, patterns, quote=mem.layer is not Layer.L4)

    def _against(self, tx: ShardTx, mem: MemoryUnit, patterns: Sequence[tuple[str, str]], *,
                 quote: bool = True) -> GuardVerdict | None:
        """``mem``'s text judged against each of ``patterns`` (id, attributes JSON). ``quote=False`` (a persona
        facet, which every agent of the user recalls with its verdict): the reason names the anti-pattern by its
        id only, not its text, which is one agent's (the review queue, the user's, shows it)."""
        flagged: GuardVerdict | None = None
        meaning = self.similarity.within(tx, mem.scope.home) if isinstance(self.similarity, KeptSimilarity) \
            else self.similarity
        keys = _text_keys(mem.content)
        for mid, attributes in patterns:
            pattern, why = _pattern_of(attributes)
            if not pattern or not _may_concern(keys, pattern, self.threshold) or negated_about(mem.content, pattern):
                continue
            said = f" ({pattern!r}: {why})" if quote else ""
            if matches(mem.content, pattern, self.threshold):
                return GuardVerdict(mid, f"re-asserts anti-pattern {mid}{said}", anti_pattern=True)
            found = reassertion(mem.content, pattern, meaning)
            said = f" ({pattern!r}: {why}; {found[1]})" if quote and found is not None else said
            if found is not None and found[0] == "refuse":
                return GuardVerdict(mid, f"re-asserts anti-pattern {mid}{said}", anti_pattern=True)
            if found is not None and flagged is None:
                flagged = GuardVerdict(mid, f"may re-assert anti-pattern {mid}{said}", action="flag",
                                       anti_pattern=True)
        return flagged


def _sharing(shingles: frozenset[str], *terms: frozenset[str]) -> set[str]:
    """What a tombstone must hold one of to be compared with a text of these keyed shingles and terms (a term's
    hash without its class mark, as ``tombstone_keys`` holds it)."""
    return {*shingles, *(h[2:] for some in terms for h in some)}


_Keys = tuple[frozenset[str], frozenset[str], str]
"""A text's content terms (its clauses' too), its tokens and its normal form: what :func:`_may_concern` compares."""


def _text_keys(text: str) -> _Keys:
    return (terms(text).union(*(terms(c) for c in _CLAUSE.split(text) if c)), tokens(text), normalise_text(text))


@functools.lru_cache(maxsize=4096)
def _pattern_keys(pattern: str) -> _Keys:
    return _text_keys(pattern)


@functools.lru_cache(maxsize=4096)
def _pattern_of(attributes: str) -> tuple[str, str]:
    """An anti-pattern's pattern and reason, from its attributes (JSON), read once."""
    attrs = orjson.loads(attributes)
    return str(attrs.get("pattern") or ""), str(attrs.get("why_bad") or "no reason recorded")


def _may_concern(text: _Keys, pattern: str, threshold: float) -> bool:
    """Whether a text can re-assert ``pattern`` at all: :func:`matches` needs a shared token or one text inside
    the other, :func:`reassertion` a shared content term (a clause's), and :func:`negated_about` only ever lets a
    pattern go. A derived memory was judged in full against every anti-pattern of its agent, whatever it said."""
    (mine, my_tokens, my_text), (theirs, their_tokens, their_text) = text, _pattern_keys(pattern)
    return (threshold <= 0 or bool(mine & theirs) or bool(my_tokens & their_tokens)
            or (len(their_text) >= 12 and their_text in my_text) or (len(my_text) >= 12 and my_text in their_text))


LiveCopies = Mapping[str, int]
"""Value hashes of the stored raw messages a derived memory rests on, each with when the earliest of them was
stored (its insert's audit id: the shard's order of application)."""


def _live_copies(tx: ShardTx, mem: MemoryUnit, key: bytes) -> LiveCopies:
    """The raw messages a derived memory rests on (see :data:`LiveCopies`). An erased message whose very text
    one of them repeats, stored before the erasure (said elsewhere, or before: an exact re-send of a distinctive
    text after it is refused at L0), is still stored and served: a derived memory citing that copy is not
    refused for the erased one, whether it is formed before or after the erasure (a replay forms it after). A
    short text said again after the erasure is the user's new message at L0, but what is derived from it
    re-states the erased content: that copy exempts nothing (see :func:`_copied_before`)."""
    rows = tx.raw_evidence(mem.scope, mem.evidence)
    order = tx.inserted_at([str(row["memory_id"]) for row in rows])
    out: dict[str, int] = {}
    for row in rows:
        at = order.get(str(row["memory_id"]), 0)
        for h in value_hashes(key, row["content"]):
            out[h] = min(out.get(h, at), at)
    return out


def _copied_before(tx: ShardTx, live: LiveCopies, erased_hash: str, tombstone_id: str) -> bool:
    """A copy of the erased text among ``live`` was stored before the tombstone ``tombstone_id`` refused anything
    (a replay's carried tombstone refuses from the replayed erasure on, as the source's did: the same order). A
    shard without those audit rows counts every copy, as before (a restore re-applies the proposals log, and so
    writes them again in the same order)."""
    stored = live.get(erased_hash)
    if stored is None:
        return False
    active = tx.tombstone_active_since(tombstone_id)
    return active is None or stored < active


FREE_TEXT_ATTRIBUTES = ("subject", "pattern", "why_bad", "better_alternative")
"""An atom's attributes that hold text of their own (a model's words, not only the content's)."""


def _free_text(mem: MemoryUnit) -> list[str]:
    """The atom's free-text attributes that say more than its content does."""
    folded = mem.content.casefold()
    return [v for k in FREE_TEXT_ATTRIBUTES if isinstance(v := mem.attributes.get(k), str) and v.strip()
            and v.casefold() not in folded]


def is_capsule(mem: MemoryUnit) -> bool:
    return mem.layer is Layer.L1 and mem.kind.value == "capsule"


def is_scene(mem: MemoryUnit) -> bool:
    return mem.layer is Layer.L3 and mem.kind.value == "scene"


def summarises(mem: MemoryUnit) -> bool:
    """A capsule, a scene or a persona facet: recomputed whole from memories that are stored anyway (a session's
    messages, the atoms naming an anchor, the atom that states the facet, which another agent than the one whose
    anti-pattern it re-asserts may have heard). One that re-asserts an anti-pattern is held for review, not
    refused (see ``ops.memory``), whichever of the two was stored first."""
    return is_capsule(mem) or is_scene(mem) or mem.layer is Layer.L4


def _judged(mem: MemoryUnit) -> bool:
    """Whether the guard judges ``mem`` against anti-patterns (see ``WriteGuard._anti_pattern``)."""
    if mem.layer is Layer.L0 or mem.kind.value == "anti_pattern":
        return False
    # a failed outcome reports the pattern's failure, not a re-assertion of it: by its own words, not by the
    # label (a model's success=false had let "Use pickle for the session cache, it is the fastest." past)
    return not (mem.kind.value == "outcome" and mem.attributes.get("success") is False
                and reports_failure(mem.content))


def _members(tx: ShardTx, mem: MemoryUnit) -> list[MemoryUnit]:
    """A scene's member atoms still stored, in its order."""
    return [row_to_memory(row) for row in map(tx.memory_row, mem.evidence) if row is not None]


def _members_apart(mem: MemoryUnit) -> bool:
    """A scene whose members can be told apart: a line for each atom of its evidence. An atom's own text may
    hold a line that reads as a member ("- [x] the papers", a model's checklist): such a scene is judged
    whole, where its pieces, judged alone, would each hold too little of an erased message."""
    return is_scene(mem) and len(scene.members(mem.content)) == len(mem.evidence)


RECOMPUTED = frozenset({Layer.L1, Layer.L3})
"""Layers whose memories are recomputed whole from their inputs, each version under the same id (a session's
capsule, a node's scene)."""


def erased_itself(tx: ShardTx, mem: MemoryUnit) -> str | None:
    """The tombstone of a memory that arrives again as it was when erased: the same id and content (a replay
    of a log whose records still open, after one memory was erased: the message, or a capsule derived again;
    a redelivery). Nothing to store and nothing to review: the writer voids it, where a rejection kept the
    erased text in the rejections table. A capsule or scene erased by its id is void in any later version: a
    new message would fold the erased summary's sentences into it again, and whether the fold came before or
    after the erasure depended on timing (the source and its replay disagreed). One that went with a memory
    erased by its id (the message a capsule quoted, the atom a scene listed) was not erased itself: what is left
    is summarised again."""
    key = tx.existing_guard_key(mem.scope.home)
    if key is None:
        return None
    found = next((f for h in value_hashes(key, mem.content)
                  if (f := tx.tombstone_of_memory(mem.scope, mem.memory_id, h)) is not None), None)
    if found is None and mem.layer in RECOMPUTED:  # erased by its id: not made again, whatever its content
        found = tx.tombstone_of_memory(mem.scope, mem.memory_id)
        if found is not None and (not found[1].startswith(ERASED_BY_ID_PREFIX) or tx.buried_beneath(found[0])):
            found = None  # its session, agent, user or evidence was erased: what is said afterwards folds anew
    return None if found is None else found[0]


def _erased(tombstone_id: str, reason: str) -> GuardVerdict:
    return GuardVerdict(tombstone_id, f"matches erased content (tombstone {tombstone_id}: {reason})")
