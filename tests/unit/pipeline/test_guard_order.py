"""The write guard and arrival order (issue 13's determinism). A change that made an anti-pattern guard only
memories of a later valid time (so the state would not depend on which arrived first) was reverted after a
review found both tests below failing with it: a session capsule that began before the anti-pattern re-asserted
it, and a backdated turn got past the guard. What made the state depend on arrival order was a false refusal: a
failed outcome ("I tried X and it locked the table") is the evidence for the anti-pattern, and is now stored
whichever arrived first."""

from __future__ import annotations

from datetime import timedelta

from altm.core import TurnEvent
from altm.core.settings import Settings
from tests.support.memories import running
from tests.support.rows import rows
from tests.support.turns import T0, make_turn

ANTI = "Never use PostgreSQL for billing because it loses data."
REASSERT = "We decided to use PostgreSQL for billing in production."


async def _stored(settings: Settings, *phases: list[TurnEvent]) -> Settings:
    """Each phase is published once the one before it is fully stored (arrival order fixed)."""
    s = settings.model_copy(update={"embedder": "none"})
    async with running(s) as runtime:
        for turns in phases:
            await runtime.publish(turns)
            await runtime.run_until_idle()
    return s


_HELD = ("SELECT trust_status, trust_reason FROM memories WHERE layer='L1' AND content LIKE '%PostgreSQL%' "
         "AND content LIKE '%decided%'")


async def test_a_capsule_of_a_session_that_began_before_the_anti_pattern_is_still_guarded(
        settings: Settings) -> None:
    """Session s1 begins at T0+1, the anti-pattern is stated (s0) at T0+2, and s1 re-asserts it at T0+3:
    the L2 atom is refused, and s1's L1 capsule (valid_from = its first message, T0+1), which quotes the
    re-assertion under Decisions, is held for review naming the anti-pattern (it was stored unguarded, since
    the anti-pattern is not 'stated before' T0+1). A capsule is held, not refused: it summarises messages
    that are stored anyway, and whether it or the anti-pattern reaches the writer first depends on batching
    (see the next test)."""
    s = await _stored(settings, [make_turn(1, "Let's plan the billing service migration."),
                                 make_turn(2, ANTI, session="s0")],
                      [make_turn(3, REASSERT)])
    capsules = rows(s.data_dir, _HELD)
    assert [c["trust_status"] for c in capsules] == ["uncertain"], capsules
    assert "re-asserts anti-pattern" in str(capsules[0]["trust_reason"])
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L2' AND kind='decision'") == []


async def test_a_capsule_stored_before_the_anti_pattern_is_held_when_it_comes(settings: Settings) -> None:
    """The same capsule, stored before the anti-pattern it re-asserts (the session came first): held for
    review once the anti-pattern is stored, exactly as when the anti-pattern came first."""
    first = await _stored(settings.model_copy(update={"data_dir": settings.data_dir / "capsule-first"}),
                          [make_turn(3, REASSERT)], [make_turn(2, ANTI, session="s0")])
    later = await _stored(settings.model_copy(update={"data_dir": settings.data_dir / "anti-pattern-first"}),
                          [make_turn(2, ANTI, session="s0")], [make_turn(3, REASSERT)])
    held = rows(first.data_dir, _HELD)
    assert [c["trust_status"] for c in held] == ["uncertain"], held
    assert held == rows(later.data_dir, _HELD)


async def test_a_backdated_turn_that_arrives_after_the_anti_pattern_is_refused(settings: Settings) -> None:
    """The anti-pattern is stored (T0+5); a turn that arrives afterwards but carries a producer-set timestamp
    a minute earlier (T0+4, any time back to 1900 works) re-asserts it: its L2 decision is stored, active and
    unflagged, where before this commit it was refused."""
    late = make_turn(9, REASSERT, session="s2").model_copy(update={"timestamp": T0 + timedelta(minutes=4)})
    s = await _stored(settings, [make_turn(5, ANTI, session="s0")], [late])
    stored = rows(s.data_dir, "SELECT content, trust_status FROM memories WHERE layer='L2' AND kind='decision'")
    assert stored == [], stored


async def test_a_failed_outcome_of_an_anti_pattern_is_evidence_not_a_re_assertion(settings: Settings) -> None:
    """The sample conversation's own pair: refused before when the anti-pattern had been stored first, stored
    when the outcome came first (as in the conversation)."""
    tried = make_turn(1, "Back on the billing migration. I tried running the refund batch in a single transaction "
                         "and it locked the invoices table for minutes.", session="s2")
    rule = make_turn(3, "Right. Don't run the refund batch in one big transaction because it locks the invoices "
                        "table; use chunks of 500 rows with a commit per chunk instead.", session="s2")
    for name, phases in (("outcome-first", [[tried], [rule]]), ("rule-first", [[rule], [tried]])):
        s = await _stored(settings.model_copy(update={"data_dir": settings.data_dir / name}), *phases)
        outcomes = rows(s.data_dir, "SELECT attributes FROM memories WHERE layer='L2' AND kind='outcome'")
        assert [o["attributes"] for o in outcomes] == ['{"success":false,"turn_id":"s2-t1"}'], name
        assert rows(s.data_dir, "SELECT reason FROM rejections WHERE reason LIKE '%anti-pattern%'") == [], name
