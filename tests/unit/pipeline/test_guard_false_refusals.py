"""The paraphrase-aware guard does not refuse legitimate derived memories. Found by a review of it: an
erased message with a year refused every later session capsule, two small numbers made a restatement, a
two-term pattern was met by chance, and one negation anywhere in a text switched the anti-pattern check off."""

from __future__ import annotations

from pathlib import Path

import pytest

from altm.core import Settings
from benchmarks._guard import guard_bench
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn


async def test_an_erased_message_with_a_year_does_not_refuse_every_later_session_capsule(settings: Settings) -> None:
    """Two shared terms, one with a digit, refuse a derived memory: the capsule template itself
    ("Session s2 (2 messages, 2026-11-02)") shares "session" and "2026" with the erased message."""
    settings = settings.model_copy(update={"embedder": "none"})
    secret = make_turn(1, "My therapy session in 2026 was hard.", session="s1")
    async with store_with(settings, [secret]) as (rt, app):
        await app.erase(secret.scope, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "Let's refactor the billing module.", session="s2"),
                          make_turn(3, "Start with the invoice parser.", session="s2")])
        await rt.run_until_idle()
    refused = rows(settings.data_dir, "SELECT reason FROM rejections")
    capsules = rows(settings.data_dir, "SELECT content FROM memories WHERE layer='L1'")
    assert not refused, refused
    assert capsules


def test_two_small_numbers_are_not_a_restatement(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.erase("I have 2 kids and we moved here 5 years ago.")
        assert b.decide("Sprint 5 has 2 open tickets for the parser.")[0] == "admit"


def test_a_two_term_pattern_is_not_refused_on_terms_alone(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.add_anti_pattern("deploy on Fridays", "nobody is around when it breaks")
        assert b.decide("Releases moved to Tuesday; Friday is for retros.")[0] == "admit"


@pytest.mark.xfail(strict=True, reason="known limit: every term of the pattern, each in another clause, and a "
                                       "meaning that the terms cannot tell (\"only references\")")
def test_a_statement_naming_every_term_of_a_pattern_in_other_clauses_is_not_refused(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.add_anti_pattern("store secrets in git", "anyone with the repo reads them")
        assert b.decide("Secrets are stored in Vault; git holds only references to them.")[0] == "admit"


def test_a_negation_word_anywhere_does_not_switch_the_anti_pattern_check_off(tmp_path: Path) -> None:
    """``negates`` looks at the whole text: one "not"/"avoid"/"stop" anywhere admits a plain re-assertion."""
    with guard_bench(tmp_path, None) as b:
        b.add_anti_pattern("use pickle for the session cache", "unpickling runs code")
        assert b.decide("Session cache entries are pickled now.")[0] == "refuse"  # the module's own example
        assert b.decide("Session cache entries are pickled now, which is not slower than JSON.")[0] == "refuse"
