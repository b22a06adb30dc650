"""The write guard, evaluated by the writer for every proposal (so no writer path can bypass it).

* Tombstones (erased content) apply to every layer, L0 included: erased content is not re-captured on
  replay.
* Anti-patterns apply to derived memories: a derived memory that re-asserts a stored anti-pattern's
  ``pattern`` (without negating it) is refused. A raw message is always captured as L0.

Matching is forgiving: normalised text, containment either way, or token overlap above a threshold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from altm.core import Layer, MemoryUnit, normalise_text, sha256_hex
from altm.store import ShardTx

_TOKEN = re.compile(r"[a-z0-9][a-z0-9_\-]*")
_STOP = frozenset("a an the and or to of in on at for with by is are was were be it this that i we you my our "
                  "your its".split())
_NEGATION = re.compile(r"\b(?:don't|do not|dont|never|avoid|stop|instead of|rather than|not|no longer|"
                       r"shouldn't|should not|mistake|bad idea|anti-pattern)\b")
MIN_TOKENS = 3


class GuardUnavailable(RuntimeError):
    """The guard could not be evaluated; the proposal must be deferred, never accepted."""


@dataclass(frozen=True)
class GuardVerdict:
    record_id: str
    reason: str


def negates(text: str) -> bool:
    """The text speaks against something (don't, never, avoid, instead of...)."""
    return bool(_NEGATION.search(text.casefold()))


def tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _TOKEN.findall(normalise_text(text)) if t not in _STOP)


def value_hash(text: str) -> str:
    return sha256_hex(normalise_text(text))


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
    def __init__(self, threshold: float = 0.8) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("the guard's overlap threshold is in (0, 1]")
        self.threshold = threshold

    def check(self, tx: ShardTx, mem: MemoryUnit) -> GuardVerdict | None:
        try:
            return self._tombstone(tx, mem) or self._anti_pattern(tx, mem)
        except Exception as exc:  # fail closed: a guard that cannot decide must not let the write through
            raise GuardUnavailable(f"write guard could not be evaluated: {type(exc).__name__}: {exc}") from exc

    def _tombstone(self, tx: ShardTx, mem: MemoryUnit) -> GuardVerdict | None:
        exact = tx.tombstone_of_value(mem.scope, value_hash(mem.content))
        if exact is not None:
            tid, reason = exact
            return GuardVerdict(tid, f"matches erased content (tombstone {tid}: {reason})")
        for tid, text, reason in tx.tombstones(mem.scope):
            if matches(mem.content, text, self.threshold):
                return GuardVerdict(tid, f"matches erased content (tombstone {tid}: {reason})")
        return None

    def _anti_pattern(self, tx: ShardTx, mem: MemoryUnit) -> GuardVerdict | None:
        if mem.layer is Layer.L0 or mem.kind.value == "anti_pattern" or negates(mem.content):
            return None
        for mid, attributes in tx.anti_patterns(mem.scope):
            attrs = orjson.loads(attributes)
            pattern = str(attrs.get("pattern") or "")
            if pattern and matches(mem.content, pattern, self.threshold):
                why = attrs.get("why_bad") or "no reason recorded"
                return GuardVerdict(mid, f"re-asserts anti-pattern {mid} ({pattern!r}: {why})")
        return None
