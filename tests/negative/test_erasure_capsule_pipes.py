"""From the review of capsule statements: a sentence holding " | " (a shell pipe, a table row) was two statements
of the capsule's text, and when the part after the pipe re-stated an erased message it was cut from the text
but kept in ``attributes.sections``, whose items were compared whole with the parts left out. Fold now writes
items free of " | " (``altm.core.capsule.flat``), and an item that holds a statement left out goes too."""

from __future__ import annotations

from altm.core.capsule import sections_without, statements
from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn

PIPED = "We decided to run tail | grep on the logs, since Maya got the nursing job in Leeds."


def test_sections_without_a_piped_sentence_part() -> None:
    capsule = f"Session s2 (1 messages, 2026-01-01)\nDecisions: {PIPED}"
    left_out = frozenset(s.text for s in statements(capsule)[1:])  # the part after the pipe
    kept = sections_without({"decisions": [PIPED]}, left_out)
    assert "Leeds" not in str(kept)


async def test_erased_content_after_a_pipe_stays_out_of_the_sections(settings: Settings) -> None:
    erased = make_turn(1, "My sister Maya is moving to Leeds for a nursing job in the spring.", session="s1")
    later = [make_turn(2, "We decided to meet at the museum on Friday morning.", session="s2"),
             make_turn(3, PIPED, session="s2")]
    await said_after_erasure(settings, erased, later)
    (capsule,) = rows(settings.data_dir, "SELECT content, attributes FROM memories WHERE layer='L1' "
                                         "AND session_id='s2'")
    assert "Leeds" not in capsule["content"]  # holds: the text is cut at the pipe
    assert "Leeds" not in capsule["attributes"], capsule["attributes"]
