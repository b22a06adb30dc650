"""A capsule keeps what its session said when one of its statements re-states an erased message: that
statement is left out of the stored version, not the capsule refused whole. Before, after an erasure of 10 %
of the LoCoMo dev sessions, 11 to 14 capsules of the other sessions were refused (benchmarks/erasure_guard.py):
one chit-chat line ("What was the best part?") or one thing said again was enough to lose a session's
decisions, constraints and questions."""

from __future__ import annotations

from altm.core.capsule import sections_without, statements, without
from altm.core.settings import Settings
from tests.support.memories import said_after_erasure
from tests.support.rows import rows
from tests.support.turns import make_turn


async def test_a_statement_that_re_states_erased_content_is_left_out_of_the_capsule(settings: Settings) -> None:
    erased = make_turn(1, "Next month I'm having an LGBTQ art show in Seattle with my paintings, can't wait!",
                       session="s1")
    later = [make_turn(2, "We decided to meet at the museum on Friday morning.", session="s2"),
             make_turn(3, "Are you showing your paintings at the LGBTQ art show in Seattle next month?",
                       session="s2"),
             make_turn(4, "The parking garage must be booked two days ahead.", session="s2")]
    await said_after_erasure(settings, erased, later)
    (capsule,) = rows(settings.data_dir, "SELECT content, attributes FROM memories WHERE layer='L1' "
                                         "AND session_id='s2'")
    assert "museum on Friday" in capsule["content"]
    assert "parking garage" in capsule["content"]
    assert "LGBTQ" not in capsule["content"] and "Seattle" not in capsule["content"]
    # the question; "next month" among its dates stays (words of time alone are no erased value)
    assert '"guard_left_out":"1"' in capsule["attributes"].replace(" ", "")
    assert "LGBTQ" not in capsule["attributes"]  # nor in its sections
    assert not rows(settings.data_dir, "SELECT 1 FROM memories WHERE layer != 'L0' AND content LIKE '%LGBTQ%'")
    assert not rows(settings.data_dir, "SELECT 1 FROM rejections WHERE payload LIKE '%\"kind\":\"capsule\"%'")


async def test_a_capsule_whose_every_statement_re_states_erased_content_is_refused(settings: Settings) -> None:
    erased = make_turn(1, "I'm having an LGBTQ art show in Seattle with my paintings, can't wait!", session="s1")
    again = make_turn(2, "Are you showing your paintings at the LGBTQ art show in Seattle?", session="s2")
    await said_after_erasure(settings, erased, [again])
    assert not rows(settings.data_dir, "SELECT 1 FROM memories WHERE layer='L1' AND session_id='s2'")
    assert rows(settings.data_dir, "SELECT 1 FROM memories WHERE layer='L0' AND session_id='s2'")
    (refused,) = rows(settings.data_dir, "SELECT reason FROM rejections")
    assert "matches erased content" in str(refused["reason"])


def test_statements_left_out_of_a_capsule_text_and_its_sections() -> None:
    capsule = ("Session s2 (3 messages, 2026-01-01)\nDecisions: meet at the museum | show the paintings\n"
               "Numbers and dates: next month, Friday\nnot a section: judged whole")
    assert [s.text for s in statements(capsule)] == [
        "meet at the museum", "show the paintings", "next month", "Friday", "not a section: judged whole"]
    assert [s.value for s in statements(capsule)] == [False, False, True, True, False]
    assert without(capsule, frozenset({"show the paintings", "Friday", "not a section: judged whole"})) == (
        "Session s2 (3 messages, 2026-01-01)\nDecisions: meet at the museum\nNumbers and dates: next month")
    assert without(capsule, frozenset(s.text for s in statements(capsule))) is None
    sections = {"decisions": ["meet at the museum", "show the paintings"], "numbers": ["next month", "Friday"]}
    assert sections_without(sections, frozenset({"show the paintings", "Friday"})) == {
        "decisions": ["meet at the museum"], "numbers": ["next month"]}
