"""The model-free cue rules on ordinary conversation (not templated sentences)."""

from __future__ import annotations

import pytest

from altm.core import Kind
from altm.pipeline.processors import _rules as rules

REALISTIC = [
    ("Honestly I'd rather we kept the API responses in snake_case, camelCase always trips up our Python folks.",
     Kind.PREFERENCE),
    ("I really like how terse the Go error handling ended up in the new worker.", Kind.PREFERENCE),
    ("After a long debate the team agreed to move the nightly jobs to Airflow.", Kind.DECISION),
    ("Let's go with Postgres for the audit log, we already run it everywhere.", Kind.DECISION),
    ("The staging deploy failed again because the migration ran before the new image was pulled.", Kind.OUTCOME),
    ("That worked, the cache hit rate went from 40% to 85% after we added the warmup step.", Kind.OUTCOME),
    ("Our checkout page throws a 502 whenever the payment provider is slow.", Kind.ISSUE),
    ("We still need to rotate the S3 credentials before the audit next week.", Kind.TASK),
    ("Rule of thumb: keep every Lambda under 50 MB or cold starts get ugly.", Kind.HEURISTIC),
    ("My sister lives in Lisbon and visits every summer.", Kind.FACT),
    ("We use Terraform for everything except the DNS records.", Kind.FACT),
]


@pytest.mark.parametrize(("sentence", "kind"), REALISTIC)
def test_cue_rules_find_atoms_in_ordinary_sentences(sentence: str, kind: Kind) -> None:
    match = rules.classify(sentence)
    assert match is not None, sentence
    assert match.kind is kind, (sentence, match.kind)


@pytest.mark.parametrize(
    ("sentence", "pattern", "why", "better"),
    [
        ("Don't run the refund batch in one big transaction because it locks the invoices table; "
         "use chunks of 500 rows instead.", "run the refund batch in one big transaction",
         "it locks the invoices table", "chunks of 500 rows"),
        ("Never store session tokens in localStorage since any XSS can read them, use httpOnly cookies.",
         "store session tokens in localStorage", "any XSS can read them", "httpOnly cookies"),
        ("Avoid mocking the database in integration tests as it hides migration bugs.",
         "mocking the database in integration tests", "it hides migration bugs", None),
        ("Force-pushing to main was a mistake because it wiped two commits; use a revert instead.",
         "Force-pushing to main", "it wiped two commits", "a revert"),
    ],
)
def test_anti_patterns_carry_why_and_alternative(sentence: str, pattern: str, why: str, better: str | None
                                                 ) -> None:
    match = rules.classify(sentence)
    assert match is not None and match.kind is Kind.ANTI_PATTERN
    assert match.attributes["pattern"] == pattern
    assert match.attributes["why_bad"] == why
    assert match.attributes["better_alternative"] == better


@pytest.mark.parametrize("sentence", [
    "Thanks, that makes sense.",
    "Sounds good to me!",
    "What time is it in Tokyo right now?",
])
def test_small_talk_is_not_an_atom(sentence: str) -> None:
    assert rules.classify(sentence) is None


def test_entities_dates_numbers_and_paths() -> None:
    text = ("Dana moved BILL-482 to Priya; the fix lives in billing/webhooks.py and ships with PostgreSQL 15 "
            "on March 3rd, 2026 after 12000 rows were migrated. See https://example.org/runbook.")
    ents = rules.named_entities(text)
    for expected in ("Dana", "BILL-482", "Priya", "billing/webhooks.py", "PostgreSQL 15"):
        assert expected in ents
    assert rules.dates(text) == ["March 3rd, 2026"]
    assert "12000 rows" in rules.numbers(text)
    assert "https://example.org/runbook" in rules.paths(text)


def test_values_separate_asserted_from_negated() -> None:
    v = rules.values_of("Actually the deadline moved: it is now January 10, not December 15.")
    assert v.asserted == ["January 10"] and v.negated == ["December 15"]
    assert rules.subject_of("The deadline is December 15.") == "deadline"
    assert rules.subject_of("Our release train was cancelled.") == "release train"


FORMATION_SET = [  # issue 15, item 3: what benchmarks/formation.py's dev set missed or got wrong
    ("I always write commit messages in the imperative mood.", Kind.PREFERENCE),  # a habit of the speaker
    ("Lesson learned: paginate large exports instead of raising timeouts.", Kind.HEURISTIC),  # not an issue
    ("My flight to Lisbon leaves on May 12.", Kind.FACT),
    ("Disk on db-01 filled up overnight; the alert fired at 03:12.", Kind.ISSUE),
]


@pytest.mark.parametrize(("sentence", "kind"), FORMATION_SET)
def test_habits_lessons_schedules_and_incidents(sentence: str, kind: Kind) -> None:
    match = rules.classify(sentence)
    assert match is not None and match.kind is kind, (sentence, match and match.kind)


# what the first held-out formation set missed (2026-12-06: it is a tuning set since), with sentences of the same
# shapes written for this test
TUNED_ON_HELD_OUT = [
    ("The checkout API returned 502s for twenty minutes after the deploy.", Kind.ISSUE),  # "502s": a plural code
    ("Our gateway answered 503s all morning.", Kind.ISSUE),
    ("Blocker: the staging cluster keeps evicting pods.", Kind.ISSUE),
    ("The search indexer keeps crashing on large PDFs.", Kind.ISSUE),
    ("Yesterday I finished the schema migration for the events table.", Kind.OUTCOME),  # a first-person completion
    ("We finally shipped the new onboarding flow.", Kind.OUTCOME),
    ("Our benchmark shows the new tokenizer is 18% faster on long documents.", Kind.OUTCOME),  # a measured result
    ("The rewrite made the nightly job 40 percent cheaper.", Kind.OUTCOME),
    ("hey, quick one: the billing service moves from Flask to FastAPI this quarter.", Kind.FACT),  # present tense
    ("The reporting job starts at 06:00 every day.", Kind.FACT),
]


@pytest.mark.parametrize(("sentence", "kind"), TUNED_ON_HELD_OUT)
def test_status_codes_blockers_completions_measured_results_and_schedules(sentence: str, kind: Kind) -> None:
    match = rules.classify(sentence)
    assert match is not None and match.kind is kind, (sentence, match and match.kind)


@pytest.mark.parametrize("sentence", [
    "The refund batch now commits every 500 rows.",  # a number, not a status code
    "I keep notes in a paper notebook.",
    "If we finished the migration early we could take Friday off?",
])
def test_numbers_habits_and_questions_are_not_incidents_or_completions(sentence: str) -> None:
    match = rules.classify(sentence)
    assert match is None or match.kind not in (Kind.ISSUE, Kind.OUTCOME), (sentence, match.kind)


def test_quoted_speech_is_not_the_speakers_own_statement() -> None:
    assert rules.classify('My colleague said "I prefer tabs over spaces", which I don\'t agree with.') is None
    assert rules.classify("I prefer tabs over spaces.") is not None


def test_systems_named_by_common_nouns_and_lower_case_hosts_are_entities() -> None:
    """Scenes form around entities shared by two sessions; "the billing service" is one, as is db-01."""
    assert "billing service" in rules.named_entities("hey: the billing service moves to FastAPI this quarter.")
    assert "session cache" in rules.named_entities("Let's go with orjson for the session cache serialisation.")
    assert "db-01" in rules.named_entities("Always check the WAL archive before deleting anything on db-01.")
    assert rules.noun_phrases("the service is down; our new cache is cold") == []  # no modifier, no name
    assert rules.noun_phrases("The Billing Service and the billing service") == ["billing service"]


def test_closing_html_tags_are_not_paths() -> None:
    """Seen in the memory browser's screenshot of an HTML payload: "</script>" made a "/script" entity."""
    entities = rules.named_entities('<script>x</script><a href="y">click</a> and see /etc/hosts')
    assert "/script" not in entities and "/a" not in entities and "/etc/hosts" in entities


def test_classify_gives_each_caller_its_own_match() -> None:
    """The matching is remembered per sentence (fold and extract classify the same sentences): a caller that
    changes its match's attributes changes no other caller's."""
    sentence = "Never deploy on Fridays because rollbacks need the whole team."
    first = rules.classify(sentence)
    assert first is not None and first.kind is Kind.ANTI_PATTERN
    first.attributes["occurrences"] = 7
    first.attributes["extra"] = "x"
    again = rules.classify(sentence)
    assert again is not None and again is not first
    assert again.attributes["occurrences"] == 1 and "extra" not in again.attributes


def test_long_sentences_are_not_remembered() -> None:
    """The memory of matches is bounded in size, not only in count: a sentence longer than the limit (a
    hostile turn can hold 64 KiB in one sentence) is classified each time and not kept."""
    long = "We decided to keep " + "very " * 400 + "long notes."
    assert len(long) > rules._REMEMBERED_CHARS
    before = rules._classified.cache_info().currsize
    match = rules.classify(long)
    assert match is not None and match.kind is Kind.DECISION
    assert rules._classified.cache_info().currsize == before
