"""From the review of the names rule (1b5e375), each case failing on 85ab66a.

False positives on ordinary text: words of time ("last", "week") counted among the two terms a name needs, so
a friend's name and "last week" refused any later memory of that friend's week; a plural weekday ("Mondays")
was a name; the first word of a sentence opened by a bullet or a typographic quote was a name.
False negatives: a name with a letter outside a-z ("Zoë", "Émile") was never one; "21st" had become the
number 21, too short to be exact; "for my sister, Maya." was read as speaking to Maya."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._guard import guard_bench


def test_a_friend_and_last_week_is_not_the_erased_message(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.erase("I went with Maria to see the doctor last week.")
        assert b.decide("The user and Maria saw a movie last week.")[0] == "admit"


def test_a_plural_weekday_is_no_name(tmp_path: Path) -> None:
    with guard_bench(tmp_path, None) as b:
        b.erase("I drop the kids at school on Mondays before work.")
        assert b.decide("The user works from home with the kids on Mondays, and cooks pasta while listening to "
                        "jazz.")[0] == "admit"


@pytest.mark.parametrize("opening", ["- ", "“"])
def test_a_sentence_opened_by_a_bullet_or_a_curly_quote_has_no_name_first(tmp_path: Path, opening: str) -> None:
    with guard_bench(tmp_path, None) as b:
        b.erase(f"{opening}Honestly the vendor pricing doubled overnight.")
        assert b.decide("The vendor pricing honestly seems fair to the user, a flat rate.")[0] == "admit"


@pytest.mark.parametrize("name", ["Chloe", "Zoë", "Émile"])
def test_a_name_with_a_letter_outside_a_to_z_is_a_name(tmp_path: Path, name: str) -> None:
    with guard_bench(tmp_path, None) as b:
        b.erase(f"Last night I told {name} about the surprise party.")
        assert b.decide(f"{name}'s surprise party at the lake house with cake, balloons and a band.")[0] == "refuse"


@pytest.mark.parametrize(("erased", "again"), [
    ("My birthday is on the 21st.", "The user's birthday is on the 21st."),
    ("Our anniversary is on the 10th, at the boathouse.", "The user's anniversary is on the 10th."),
])
def test_an_erased_ordinal_is_still_specific(tmp_path: Path, erased: str, again: str) -> None:
    """Refused before 1b5e375 ("21st", "10th" were specific terms); admitted after it."""
    with guard_bench(tmp_path, None) as b:
        b.erase(erased)
        assert b.decide(again)[0] == "refuse"


@pytest.mark.parametrize("sister", ["my sister Maya", "my sister, Maya"])
def test_a_name_after_a_comma_at_the_end_of_a_sentence_is_not_whom_it_speaks_to(tmp_path: Path,
                                                                                 sister: str) -> None:
    """"for my sister, Maya." is read as addressing Maya (``_addressed``: a comma before, a full stop after);
    without the comma the same pair is refused."""
    with guard_bench(tmp_path, None) as b:
        b.erase(f"We are planning a surprise party at the lake house for {sister}.")
        assert b.decide("Maya's surprise party is on the weekend, with cake, balloons, a band and "
                        "fireworks.")[0] == "refuse"
