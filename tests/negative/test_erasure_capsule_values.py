"""From the review of capsule statements: an erased exact value (a gate code, a birthday) came back in the
capsule's "Numbers and dates" line. The sentence re-stating it was left out, but the line was judged as one
statement, and a lone number or date shares too few terms with the erased message. A value of those lines is
judged on its own now, and left out when it is made of an erased message's terms alone
(``guard.restates_value``)."""

from __future__ import annotations

import pytest

from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn


@pytest.mark.parametrize(("erased_text", "again", "value"), [
    ("The gate code for the back door is 4417.", "Is the back door gate code still 4417?", "4417"),
    ("My birthday is March 21.", "Is your birthday still March 21?", "March 21"),
])
async def test_an_erased_value_does_not_come_back_in_the_numbers_line(settings: Settings, erased_text: str,
                                                                     again: str, value: str) -> None:
    erased = make_turn(1, erased_text, session="s1")
    later = [make_turn(2, "We decided to meet at the museum on Friday morning.", session="s2"),
             make_turn(3, again, session="s2")]
    await said_after_erasure(settings, erased, later)
    for capsule in rows(settings.data_dir, "SELECT content, attributes FROM memories WHERE layer='L1' "
                                           "AND session_id='s2'"):
        assert again not in capsule["content"]  # holds: the question is left out
        assert value not in capsule["content"], capsule["content"]
        assert value not in capsule["attributes"], capsule["attributes"]
