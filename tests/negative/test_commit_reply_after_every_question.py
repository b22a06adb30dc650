"""A reply committed to a turn of a session dated once sorts after every question of the session.

Finding: ``commit_turn`` dates the reply at the cycle's time plus one microsecond (``REPLY_AFTER``,
``altm/app/_protocol.py:101`` and ``:309``). A host that knows only when a session happened passes one
``timestamp`` to every ``prepare_turn`` of it: the very case the conversation order of this morning exists for
(``altm/store/_conversation.py``: "Hosts that know only when a session happened send every message of it with one
time"). Every question is then dated T and every reply T + 1 µs, so the conversation order (time first,
``conversation_key`` at ``altm/store/_conversation.py:30-32``) is q1, q2, q3, r1, r2, r3: the writer links each
message's ``context`` to the wrong one (``previous_content`` through ``ShardTx.session_neighbour``,
``altm/pipeline/writer/ops/memory.py:333-336``): r1's context is q3, q2's context is q1, and recall's neighbours and
the capsule's session read pair a reply with the last question of the session. The natural turn-id order cannot help
because the reply's time is ahead of every later question's.

Reproduction: prepare_turn t1, t2, t3 of one session all with ``timestamp=DAY``, committing each reply before the
next prepare (a normal chat loop); run the pipeline; read the L0 rows' contexts.

Expected: the conversation order is t1 question, t1 reply, t2 question, t2 reply, t3 question, t3 reply: the
first reply's context is its own question, the second question's context is the first reply, and so on (e.g. date
the reply at the cycle's time and order a turn's user message before its reply in the tie, by role, after the
turn id).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE

DAY = datetime(2023, 5, 1, 10, 0, tzinfo=UTC)
EXCHANGES = [
    ("t1", "What database do we use for billing?", "We use Postgres 15 for the billing service."),
    ("t2", "Who owns the billing schema?", "Priya owns the billing schema."),
    ("t3", "Where do the nightly backups go?", "The backups go to the cold storage bucket."),
]


async def test_replies_of_a_session_dated_once_follow_their_own_questions(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        app = deployment.app
        for turn_id, question, reply in EXCHANGES:
            prepared = await app.prepare_turn(SCOPE, "s1", turn_id, question, 1000, timestamp=DAY)
            await app.commit_turn(prepared.cycle_id, reply)
        await runtime_of(deployment).run_until_idle()

    context = {str(r["content"]): r["context"] for r in rows(
        s.data_dir, "SELECT content, context FROM memories WHERE layer = 'L0' AND session_id = 's1'")}
    spoken = [line for _, question, reply in EXCHANGES for line in (question, reply)]
    assert set(context) == set(spoken)
    # actual: every reply is dated DAY + 1 µs, after every question dated DAY: the first reply follows the last
    # question and each question follows the question before it
    assert {line: context[line] for line in spoken[1:]} == {
        line: before for before, line in itertools.pairwise(spoken)}
