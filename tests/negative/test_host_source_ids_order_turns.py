"""A host that sends its own message ids (``source_id``) gets its session's messages ordered by those ids, not by
their turn ids: a correction said at the session's time loses to what it corrects, and a message is indexed with
the wrong neighbour.

Finding: the fix for statements said at one time (commit 1783916, "Atoms carry their message's turn id
(source_id) ... of two statements said at one time the later turn is the later") orders atoms by
``natural_key(m.source_id)`` (``order``, altm/pipeline/processors/facets.py:35-43) and messages by
``natural_key(row["source_id"])`` (``conversation_key``, altm/store/_conversation.py:24-27; the listing's SQL,
altm/store/_queries.py:91). But ``source_id`` is not the turn id: it is "Id in the host system; defaults to
turn_id" (``TurnEvent.source_id``, altm/core/events.py:54-56), and capture stores ``event.source_id or
event.turn_id`` (altm/pipeline/processors/capture.py:56); the turn id itself is kept only in the L0 row's
attributes (``{"turn_id": ...}``, capture.py:41) and atoms do not carry it. A host that dates a session's messages
with the session's time (the case the fix was for) and sends its own message ids (UUIDs, object ids, hashes: any
id that is not a sequence) gets an order decided by the digits in those ids. For "I prefer dark mode in the
editor." (turn 1, id msg-9f2c) and "I prefer light mode in the editor now, actually." (turn 2, id msg-1a7e), the
correction's id sorts first: nothing is superseded, both preferences are current, and a supersede of the
correction by the stale statement is held for review (no model configured and no correction cue): exactly the
symptom ``test_same_time_correction.py`` fixed for hosts that send no ``source_id``. The same order puts turn 2
before turn 1 in the session: turn 1's message is stored with turn 2's as its context, and turn 2's with none.

Reproduction: two user turns of session s1, both at 2023-05-08T13:56Z, turn ids "1" and "2" sent in that order,
source ids "msg-9f2c" and "msg-1a7e"; read the L4 facets, the held actions and the L0 rows' context.

Expected: between messages of one time, their turn ids (naturally ordered) decide which came later, whatever the
host's message ids: the dark-mode facet is superseded by the light-mode one, the light-mode facet is current, no
supersede is held for review, and turn 2's message follows turn 1's (its context is turn 1's message).
"""

from __future__ import annotations

from datetime import UTC, datetime

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

SESSION_DATE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SAID = "I prefer dark mode in the editor."
CORRECTED = "I prefer light mode in the editor now, actually."


async def test_turn_ids_not_host_message_ids_order_a_session_said_at_one_time(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [TurnEvent(scope=SCOPE, session_id="s1", turn_id=turn_id, source_id=source_id, role=Role.USER,
                       content=text, timestamp=SESSION_DATE)
             for turn_id, source_id, text in (("1", "msg-9f2c", SAID), ("2", "msg-1a7e", CORRECTED))]
    async with store_with(s, turns):
        pass
    messages = {str(r["content"]): r["context"] for r in rows(
        s.data_dir, "SELECT content, context FROM memories WHERE layer = 'L0'")}
    facets = {("light" if "light" in str(r["content"]) else "dark"): r for r in rows(
        s.data_dir, "SELECT memory_id, content, superseded_by FROM memories WHERE layer = 'L4'")}
    assert set(facets) == {"dark", "light"}
    # actual: a supersede of the light-mode facet by the dark-mode one is held for review
    assert rows(s.data_dir, "SELECT action, reason FROM held_actions") == []
    assert facets["light"]["superseded_by"] is None
    assert facets["dark"]["superseded_by"] == facets["light"]["memory_id"]
    assert messages == {SAID: None, CORRECTED: SAID}
