"""A reply committed to a prepare_turn dated by its host is dated by the wall clock: it lands after every later
turn of its session (red team of time as input).

Finding: ``prepare_turn(..., timestamp=...)`` (``altm/app/_facade.py:37``, ``altm/app/_protocol.py:204``)
lets a host date the user's turn (a host replaying or importing a conversation, a host with its own clock),
and the user message is stored with that valid time. ``commit_turn`` has no timestamp and dates the
assistant's reply with ``ts = _now()`` (``altm/app/_protocol.py:298``), ignoring the cycle's own time
(``cycle.created_at``, which is the host's timestamp). The writer orders a session's messages by
``(valid_from, source_id, memory_id)`` (``altm/store/_shard_tx.py:242-254``) and sets each message's
``context`` (the message it follows, indexed at half weight so a reply is found by its question) from that
order. So in a conversation dated 2023, every reply sorts after every question of the session: the first
reply's context is the *last* user message, the second user message follows the first user message instead
of the reply it answers, the replies are dated years later than the conversation (bundles show the wrong
date, the time prior for "in May 2023" misses them, retention and compaction measure them from the wrong
day), and the conversational-neighbour boost pairs messages that were never adjacent.

Reproduction: prepare_turn t1 at 2023-05-01T10:00Z, commit its reply; prepare_turn t2 at 10:01Z, commit its
reply; read the session's L0 rows.

Expected: each reply is dated within its own exchange (after its question, before the next turn: e.g. the
cycle's timestamp, or a timestamp commit_turn accepts), so the conversation order is t1 user, t1 reply,
t2 user, t2 reply: the first reply's context is its question, and the second question's context is the
first reply.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE

DAY = datetime(2023, 5, 1, 10, 0, tzinfo=UTC)
QUESTION_1 = "What database do we use for billing?"
REPLY_1 = "We use Postgres 15 for the billing service."
QUESTION_2 = "Who owns the billing schema?"
REPLY_2 = "Priya owns the billing schema."


async def test_a_reply_is_dated_within_its_exchange_not_by_the_wall_clock(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        app = deployment.app
        first = await app.prepare_turn(SCOPE, "s1", "t1", QUESTION_1, 1000, timestamp=DAY)
        await app.commit_turn(first.cycle_id, REPLY_1)
        second = await app.prepare_turn(SCOPE, "s1", "t2", QUESTION_2, 1000, timestamp=DAY + timedelta(minutes=1))
        await app.commit_turn(second.cycle_id, REPLY_2)
        await runtime_of(deployment).run_until_idle()

    found = {str(r["content"]): r for r in rows(
        s.data_dir, "SELECT content, context, valid_from FROM memories WHERE layer = 'L0' AND session_id = 's1'")}
    assert set(found) == {QUESTION_1, REPLY_1, QUESTION_2, REPLY_2}
    dated = {content: datetime.fromisoformat(str(r["valid_from"])) for content, r in found.items()}
    # actual: both replies are dated by the wall clock (years after 2023-05-01), so they sort after QUESTION_2
    assert dated[QUESTION_1] <= dated[REPLY_1] < dated[QUESTION_2] <= dated[REPLY_2] < DAY + timedelta(days=1)
    # actual: REPLY_1 follows QUESTION_2 and QUESTION_2 follows QUESTION_1
    assert found[REPLY_1]["context"] == QUESTION_1
    assert found[QUESTION_2]["context"] == REPLY_1
    assert found[REPLY_2]["context"] == QUESTION_2
