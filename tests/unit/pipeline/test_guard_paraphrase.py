"""A guard that catches paraphrase (issue 15, item 4): a derived memory that re-asserts an anti-pattern or
re-states erased content in other words is refused (or, when only close, held for review), and what speaks
against the pattern or merely shares its topic is admitted. Before, only containment or an 80 % token overlap
counted: "Session cache entries are pickled now" re-asserted "use pickle for the session cache" unnoticed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from altm.core.settings import Settings
from altm.models import shared_local_minilm
from altm.pipeline.writer import EmbeddingSimilarity
from altm.pipeline.writer._terms import specific, terms
from altm.pipeline.writer.guard import keyed_terms
from benchmarks._guard import GuardBench, guard_bench
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import make_turn


@pytest.fixture(scope="module")
def similarity() -> EmbeddingSimilarity:
    return EmbeddingSimilarity(shared_local_minilm())


@pytest.fixture
def bench(tmp_path: Path, similarity: EmbeddingSimilarity) -> Iterator[GuardBench]:
    with guard_bench(tmp_path, similarity) as b:
        b.add_anti_pattern("use pickle for the session cache", "unpickling runs code")
        b.add_anti_pattern("deploy on Fridays without a rollback plan", "nobody is around when it breaks")
        b.add_anti_pattern("run the refund batch in one big transaction", "it locks the ledger")
        b.erase("My bank PIN is 9921.")
        b.erase("I'm interviewing with Globex next Tuesday and haven't told my manager.")
        yield b


def test_canonical_terms_see_through_wording() -> None:
    assert terms("Session cache entries are pickled now.") >= terms("use pickle for the session cache")
    assert terms("We'll fake the DB") == terms("mock the database")
    assert terms("Earns 85,000 euros per year.") >= {"85000", "euro"}
    assert terms("I prefer that we decided to just go") == frozenset()  # stance words say nothing of the topic
    assert specific("85000") and not specific("euro")


def test_a_paraphrased_re_assertion_of_an_anti_pattern_is_refused(bench: GuardBench) -> None:
    for text in ["Session cache entries are pickled now.",
                 "Let's push the release on Friday, no rollback plan needed.",
                 "The refund batch should commit once at the end, as one transaction."]:  # terms and meaning
        decision, why = bench.decide(text)
        assert decision == "refuse", text
        assert "re-asserts anti-pattern" in why


def test_what_speaks_against_it_or_only_shares_its_topic_is_admitted(bench: GuardBench) -> None:
    for text in ["We stopped using pickle for the session cache.",
                 "The session cache now uses orjson for serialisation.",
                 "The rollback plan for the Friday release is in the wiki.",  # nothing is left out
                 "Transactions in the ledger service are capped at 10 seconds."]:
        assert bench.decide(text) == ("admit", ""), text


def test_without_a_similarity_terms_alone_decide(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.add_anti_pattern("run the refund batch in one big transaction", "it locks the ledger")
        assert b.decide("Let's process all refunds in a single large transaction.")[0] == "refuse"
        # 3 of 5 terms: refused only when the meaning is close too, and nothing is flagged without meaning
        assert b.decide("The refund batch should commit once at the end, as one transaction.")[0] == "admit"


def test_erased_content_said_in_other_words_is_refused(bench: GuardBench) -> None:
    assert bench.decide("Bank card PIN: 9921.")[0] == "refuse"
    assert bench.decide("They have an interview with Globex next Tuesday.")[0] == "refuse"
    assert bench.decide("The bank sent a new PIN by post.")[0] == "admit"  # no erased value comes back
    assert bench.decide("Interviews for the new hire are next week.")[0] == "admit"


def test_term_hashes_are_keyed_and_mark_specific_terms() -> None:
    hashed = keyed_terms(b"k" * 32, "My bank PIN is 9921.")
    assert len(hashed) == len(terms("My bank PIN is 9921."))
    assert sum(h.startswith("s:") for h in hashed) == 1  # 9921
    assert not any("9921" in h or "bank" in h for h in hashed)
    assert keyed_terms(b"j" * 32, "My bank PIN is 9921.").isdisjoint(hashed)


async def test_a_borderline_re_assertion_is_stored_for_review_not_refused(settings: Settings) -> None:
    """Through the pipeline (local embedder): the decision is kept, marked uncertain with the anti-pattern as
    the reason, and stays so after the verify stage's own verdict (only a reviewer lifts the hold)."""
    turns = [make_turn(1, "Never use floats for money amounts because of rounding errors."),
             make_turn(2, "We decided to represent prices as floating point numbers.", session="s2")]
    async with store_with(settings, turns) as (_, app):
        queue = app.recall.review_queue(turns[0].scope)
    (held,) = rows(settings.data_dir, "SELECT memory_id, trust_status, trust_reason, trust_contradicting_id "
                                      "FROM memories WHERE kind='decision'")
    (pattern,) = rows(settings.data_dir, "SELECT memory_id FROM memories WHERE kind='anti_pattern'")
    assert held["trust_status"] == "uncertain"
    assert held["trust_reason"].startswith("write guard: may re-assert anti-pattern")
    assert held["trust_contradicting_id"] == pattern["memory_id"]
    assert held["memory_id"] in str(queue)
    assert not rows(settings.data_dir, "SELECT 1 FROM rejections")


async def test_a_paraphrase_of_erased_content_forms_no_derived_memory(settings: Settings) -> None:
    secret = make_turn(1, "I'm interviewing with Globex next Tuesday and haven't told my manager.", session="s1")
    async with store_with(settings.model_copy(update={"embedder": "none"}), [secret]) as (rt, app):
        await app.erase(secret.scope, "session", session_id="s1")
        await rt.run_until_idle()
        await rt.publish([make_turn(2, "Remember: next Tuesday I have the Globex interview, my manager "
                                       "doesn't know.", session="s2")])
        await rt.run_until_idle()
    derived = rows(settings.data_dir, "SELECT layer, content FROM memories WHERE layer != 'L0' "
                                      "AND content LIKE '%Globex%'")
    assert derived == []
    assert rows(settings.data_dir, "SELECT 1 FROM memories WHERE layer='L0' AND content LIKE '%Globex%'")
    tombs = rows(settings.data_dir, "SELECT term_hashes FROM tombstones")
    assert tombs and all(t["term_hashes"] and "globex" not in t["term_hashes"] for t in tombs)


def test_a_pattern_that_leaves_something_out_is_re_asserted_by_a_negation(tmp_path: Path) -> None:
    """"Without an expiry" is said again by "never expire": the statement's negation agrees with the pattern's
    own. Before, any negation next to the pattern's terms admitted it as speaking against the pattern."""
    with guard_bench(tmp_path, None) as b:
        b.add_anti_pattern("cache API responses in Redis without an expiry", "stale forever")
        assert b.decide("Cached API responses in Redis should never expire.")[0] == "refuse"
        assert b.decide("API responses stay cached in Redis with no expiry at all.")[0] == "refuse"
        # negating the leaving-out speaks against it
        assert b.decide("We never cache API responses in Redis without an expiry.") == ("admit", "")
        assert b.decide("We no longer write API responses to Redis without an expiry.") == ("admit", "")
        assert b.decide("API responses cached in Redis now expire after five minutes.") == ("admit", "")
        b.add_anti_pattern("deploy on Fridays without a rollback plan", "nobody is around when it breaks")
        b.add_anti_pattern("go camping without checking the weather forecast", "storms")
        # "unless" and "before" with a gerund leave something out too: these negate the leaving-out
        assert b.decide("Never deploy on a Friday unless a rollback plan exists.") == ("admit", "")
        assert b.decide("Don't go camping before checking the forecast.") == ("admit", "")
        assert b.decide("We deploy on Friday before writing any rollback plan.")[0] == "refuse"



def test_a_name_of_erased_content_with_two_more_of_its_terms_is_refused(tmp_path: Path) -> None:
    """A person, a place, a street the erased message named (capitalised inside a sentence) is as telling as a
    number: it comes back with two more of the message's terms in a derived memory that says much else
    besides (too little overlap for the share rule). Before, an erased message with a number refused only a
    memory carrying that number back: the address came back without the gate code."""
    with guard_bench(tmp_path, None) as b:
        b.erase("We moved into 7 Orchard Row, flat 2C, in Galway, and the alarm code is 5083.")
        b.erase("My brother Tomasz lost his job at the Gdansk shipyard and is staying on our couch.")
        assert b.decide("The user lives on Orchard Row in Galway, flat 2C.")[0] == "refuse"
        assert b.decide("The user's brother Tomasz has been staying with them since the layoff in Gdansk, "
                        "and the user worries about him.")[0] == "refuse"
        # a name and one more term is the name again, not the erased content
        assert b.decide("The user's brother Tomasz likes football.")[0] == "admit"
        assert b.decide("The user asked for tips on moving house in Ireland.")[0] == "admit"
        assert b.decide("Shipyard jobs are scarce this year.")[0] == "admit"  # lower case: not a name


def test_thousands_are_the_same_numbers_and_names_are_marked() -> None:
    assert {"85000", "85k"} <= terms("Pre-tax income is 85k per year.")  # "85k": what older tombstones hold
    assert specific("21st")  # an ordinal stays its own, exact term
    with_names = keyed_terms(b"k" * 32, "My sister Maya lives in Leeds since March.")
    assert sum(h.startswith("n:") for h in with_names) == 2  # maya, leeds: not "My" (first) nor a month
