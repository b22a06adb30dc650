"""A session capsule keeps the line of a message retention forgot, until the session's next message.

One long-running session s1: "I decided to call Marco every Sunday evening." on day 0, "We decided to deploy
the billing service on Fridays." on day 40. ``ALTM_RETENTION_DAYS_L0/L2=30``; a retention pass at day 45
forgets the day-0 message and its atom. The capsule keeps the remaining message as evidence (README,
Lifecycle: forgetting "repairs the evidence of what was derived from it"), but its text still says "Session s1
(2 messages, 2026-11-02)", "Decisions: I decided to call Marco every Sunday evening. | …" and "Numbers and
dates: Sunday, Fridays" (the memory browser and ``list_memories`` show it). When the session's next message
comes, fold computes the capsule from the messages stored and the forgotten line is gone; if it never comes,
the forgotten content stays for good.

This is not the documented case "A memory whose evidence retention forgot whole is kept, flagged
`evidence_forgotten` and held for review": here evidence remains and nothing is flagged. An erasure handles the
same situation by handing fold a message that is left so the capsule is folded again at once
(``erasure._messages_left``: "the state must not depend on whether the session's next message ever comes").
README (Memory formation): "Derived state is recomputed from what is stored, so the final state does not
depend on arrival order" — below, the same forget and the same later message in the two orders give two
different capsules.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from altm.core import ControlAction, ControlEvent, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.orders import in_each_order
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn

FORGOTTEN = "I decided to call Marco every Sunday evening."
KEPT = "We decided to deploy the billing service on Fridays."
LATER = T0 + timedelta(days=45)


def _said(i: int, text: str, day: int) -> TurnEvent:
    return make_turn(i, text, session="s1").model_copy(update={"timestamp": T0 + timedelta(days=day)})


OLD, RECENT, NEXT = _said(1, FORGOTTEN, 0), _said(2, KEPT, 40), _said(3, "Keep the staging cluster in Dublin.", 46)


def _retention(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0,
                                       "retention_days_l2": 30.0, "data_dir": settings.data_dir.parent / name})


def _capsule(data_dir: Path) -> str:
    (row,) = rows(data_dir, "SELECT content FROM memories WHERE layer='L1' AND session_id='s1'")
    return str(row["content"])


async def test_the_capsule_drops_the_line_of_a_forgotten_message(settings: Settings) -> None:
    s = _retention(settings, "forgot")
    async with store_with(s, [OLD, RECENT]) as (rt, app):
        assert FORGOTTEN in _capsule(s.data_dir)
        assert await app.admin.retention(LATER) > 0
        await rt.run_until_idle()
        assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer IN ('L0', 'L2') AND content=?",
                    (FORGOTTEN,)) == []
        capsule = _capsule(s.data_dir)
    assert FORGOTTEN not in capsule and "2 messages" not in capsule, capsule


async def test_the_capsule_does_not_depend_on_whether_the_next_message_came_first(settings: Settings,
                                                                                  tmp_path: Path) -> None:
    first = _retention(settings, "named")
    async with store_with(first, [OLD, RECENT]) as (_, app):
        named = sorted(str(r["memory_id"]) for r in app.admin.retention_candidates(LATER))
    assert len(named) == 2  # the day-0 message and its atom
    forget = ControlEvent(event_id="ctl_forget_past_retention", scope=SCOPE, timestamp=LATER,
                          action=ControlAction.LIFECYCLE,
                          payload={"op": "forget", "memory_ids": named, "reason": "past retention", "tombstone": False})
    forget_first, next_first = await in_each_order(first, tmp_path, [OLD, RECENT], [
        ("forget-first", [forget, NEXT]), ("next-first", [NEXT, forget])])
    assert FORGOTTEN not in _capsule(forget_first)
    assert _capsule(next_first) == _capsule(forget_first)
