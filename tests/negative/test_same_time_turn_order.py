"""Messages of a session sent with one timestamp are put in the order of their turn ids *as strings*: turn 10
follows turn 1 (red team of time as input).

Finding: the writer orders a session's L0 messages by ``(valid_from, source_id, memory_id)``
(``altm/store/_shard_tx.py:242-254``, ``session_neighbour``; the readers at ``altm/store/_reader.py:75,87``
use the same order) and sets each message's ``context`` — the message it follows, indexed at half weight so
a reply is found by the question it answers — from that order. When messages share a timestamp, the tie is
broken by comparing turn ids as text, so ``"s1-10"`` sorts before ``"s1-2"``. Hosts that only know when a
session happened send every message of the session with that one time: the project's own LongMemEval
loader does exactly that (``benchmarks/longmemeval.py:57-70``: ``timestamp=ts`` of the session for every
turn, turn ids ``{session}-{i}``), as does any import of a chat export dated per conversation. In a session
of eleven messages or more, message 10 is then indexed as following message 1, message 2 as following
message 11, and so on: replies are indexed with the wrong question, and the conversational-neighbour boost
and the session's capsule follow the same wrong order. The hosts sent them in order (one partition, in
log order), and that order is lost.

Reproduction: twelve alternating user/assistant messages of session s1, all at 2023-05-08T13:56Z, turn
ids s1-0 .. s1-11, sent in that order; read each L0 message's ``context``.

Expected: messages with the same timestamp keep the order they were sent in (for these ids, their numeric
order): every message's context is the message sent just before it (message 10's context is message 9,
message 2's is message 1).
"""

from __future__ import annotations

from datetime import UTC, datetime

from altm.core import Role, Settings, TurnEvent
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE

SESSION_DATE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
"""The only time the host knows: when the session happened (as LongMemEval and LoCoMo give it)."""
LINES = [
    "I started training for the Dublin half marathon.",
    "Great! How many days a week are you running?",
    "Four days a week, mostly in the mornings.",
    "Do you do any strength training alongside it?",
    "Yes, kettlebells on Tuesdays.",
    "How is your knee holding up?",
    "It hurt after the long run on Sunday.",
    "Did you see a physio about the knee?",
    "Yes, she said to cut the long run to 14 km.",
    "Which shoes are you running in now?",
    "The blue Asics I bought in April.",
    "When do they need replacing?",
]


def _conversation() -> list[TurnEvent]:
    return [TurnEvent(scope=SCOPE, session_id="s1", turn_id=f"s1-{i}", role=(Role.USER, Role.ASSISTANT)[i % 2],
                      content=text, timestamp=SESSION_DATE) for i, text in enumerate(LINES)]


async def test_messages_sent_at_one_time_keep_the_order_they_were_sent_in(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, _conversation()):
        pass
    context = {str(r["content"]): r["context"] for r in rows(
        s.data_dir, "SELECT content, context FROM memories WHERE layer = 'L0' AND session_id = 's1'")}
    assert set(context) == set(LINES)
    # actual: "The blue Asics ..." (s1-10) follows "Great! How many days ..." (s1-1), "Four days a week ..."
    # (s1-2) follows "When do they need replacing?" (s1-11)
    assert {line: context[line] for line in LINES} == {
        line: (LINES[i - 1] if i else None) for i, line in enumerate(LINES)}
