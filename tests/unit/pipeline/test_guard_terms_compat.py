"""From the review of the names rule: tombstones keep no text, only keyed hashes of its terms as the version
that erased it computed them. 1b5e375 read "85k" as 85000 without keeping the first form, so a tombstone made
before it (the hash of "85k") no longer met a candidate's terms, and an erased salary came back. A term with
a second form keeps both now."""

from __future__ import annotations

import hashlib
import hmac

from altm.core import normalise_text
from altm.pipeline.writer._terms import _THOUSANDS, _WORD, _term, specific
from altm.pipeline.writer.guard import keyed_terms, restates_terms, term_marks

KEY = b"k" * 32


def _keyed_terms_before_1b5e375(text: str) -> frozenset[str]:
    """``keyed_terms`` as 4ef5c3a computed it (what an existing tombstone holds)."""
    found = {t for t in (_term(w) for w in _WORD.findall(_THOUSANDS.sub("", normalise_text(text)))) if t}
    return frozenset(f"{'s' if specific(t) else 't'}:{hmac.new(KEY, t.encode(), hashlib.sha256).hexdigest()[:24]}"
                     for t in found)


def test_a_tombstone_made_before_the_upgrade_still_refuses_its_value() -> None:
    erased = _keyed_terms_before_1b5e375("My pre-tax income is 85k per year.")
    candidate = "The user earns 85k a year."
    assert restates_terms(_keyed_terms_before_1b5e375(candidate), term_marks(erased))  # as it was refused before
    assert restates_terms(keyed_terms(KEY, candidate), term_marks(erased))
