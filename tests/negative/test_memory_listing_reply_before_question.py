"""Finding: since a committed reply is dated at its question's time, the memory listing ("oldest first": ``GET
/v1/memories?session_id=…``, the browser's memories page, ``altm memories``) shows a reply before the question it
answers for about every other turn: the tie is broken by memory id, a hash.

27b1619 dates the reply of ``commit_turn`` at ``cycle.created_at`` (altm/app/_protocol.py:306), the time of the
user's message (it was 1 µs after it), and relies on the conversation order's role tie-break
(altm/store/_conversation.py:26: time, natural turn id, user before assistant, id). But ``MemoryQueries.listing``
(altm/store/_queries.py:79, ``ORDER BY m.valid_from, m.memory_id``, and the re-sort of the operator's view at
line 83) orders by time and memory id only, so a turn's question and reply — now at the same time — come in the
order of their ids' hashes. This is every host's normal chat loop (``prepare_turn`` then ``commit_turn``, with
or without a host timestamp), and the listing is how a host or the browser shows a session's transcript.

Reproduction: ``prepare_turn``/``commit_turn`` four turns of session s1, each a minute after the last (host
timestamps); run the pipeline; ``list_memories(scope, session_id="s1", layer="L0")``.

Expected: the listing shows the session in conversation order: q1, r1, q2, r2, q3, r3, q4, r4 (e.g. the listing
breaks a time tie by natural turn id and role as ``conversation_key`` does, or the reply keeps a later time).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from altm.core import Settings
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
EXCHANGES = [
    ("t1", "What database do we use for billing?", "We use Postgres 15 for the billing service."),
    ("t2", "Who owns the billing schema?", "Priya owns the billing schema."),
    ("t3", "Where do the nightly backups go?", "The backups go to the cold storage bucket."),
    ("t4", "How long are backups kept?", "Backups are kept for ninety days."),
]


async def test_the_session_listing_shows_each_reply_after_its_question(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        app = deployment.app
        for i, (turn_id, question, reply) in enumerate(EXCHANGES):
            prepared = await app.prepare_turn(SCOPE, "s1", turn_id, question, 1000,
                                              timestamp=START + timedelta(minutes=i))
            await app.commit_turn(prepared.cycle_id, reply)
        await runtime_of(deployment).run_until_idle()
        listed = [str(r["content"]) for r in app.list_memories(SCOPE, session_id="s1", layer="L0")]
    spoken = [line for _, question, reply in EXCHANGES for line in (question, reply)]
    assert sorted(listed) == sorted(spoken)
    assert listed == spoken, f"the session's listing (oldest first) puts replies before their questions: {listed}"
