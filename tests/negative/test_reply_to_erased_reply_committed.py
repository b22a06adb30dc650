"""A new reply to a turn whose reply was erased is answered "committed" after a restart; the writer refuses it.

Finding: 01ec621 made ``commit_turn`` refuse (409) another reply to a turn already answered, so that a host is
never told "committed" for a reply the writer will refuse as a change of an append-only L0 row. The check,
``ProtocolService._turn_unused`` (altm/app/_protocol.py:162-180), asks ``self.recall.memory(...)`` for the stored
reply, and that answers ``NotFound`` for an erased memory (``MemoryQueries.visible``, altm/store/_queries.py:55,
hides tombstoned rows), so it takes "erased" for "never answered". Once this process no longer remembers the
first reply in ``self._turns`` (a restart, another replica, or more than ``TURNS_KEPT`` turns later), a second
cycle of the turn is committed with 200 "committed", and the writer refuses its reply ("L0 is append-only: ...
already stored with different content", and the erasure's write guard): the answer the host was told is recorded
is never stored.

Reproduction: prepare turn s2/t1 under keys k1 and k2 (same question); commit k1's cycle; run the pipeline; erase
the reply by memory id; restart (open the data dir again); commit k2's cycle with a regenerated reply; run the
pipeline; look for the reply among the session's L0 messages.

Expected: the commit is refused before anything is published (``IdempotencyConflict``, 409: regenerate under a new
turn id, as the README says), or its reply is stored; never "committed" for a reply the writer refuses.
"""

from __future__ import annotations

from altm.app import IdempotencyConflict
from altm.core.settings import Settings
from tests.support.memories import embedded, runtime_of, store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]
QUESTION = "When is the billing migration deadline?"
REGENERATED = "It is December 15 (regenerated answer)."
REPLIES = "SELECT memory_id, content FROM memories WHERE layer = 'L0' AND role = 'assistant' AND session_id = 's2'"


async def test_a_reply_to_a_turn_whose_reply_was_erased_is_not_committed_into_a_refusal(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        first = await app.prepare_turn(SCOPE, "s2", "t1", QUESTION, 800, idempotency_key="k1")
        second = await app.prepare_turn(SCOPE, "s2", "t1", QUESTION, 800, idempotency_key="k2")
        await app.commit_turn(first.cycle_id, "December 15.")
        await rt.run_until_idle()
        replies = rows(s.data_dir, REPLIES, ())
        assert len(replies) == 1
        await app.erase(SCOPE, "memory", memory_id=str(replies[0]["memory_id"]))
        await rt.run_until_idle()
    async with embedded(s) as d:  # restarted: this process has not said the first reply
        try:
            done = await d.app.commit_turn(second.cycle_id, REGENERATED)
        except IdempotencyConflict:
            return  # refused before anything was published: fine
        await runtime_of(d).run_until_idle()
    stored = [str(r["content"]) for r in rows(s.data_dir, REPLIES, ())]
    refused = [str(r["reason"]) for r in rows(s.data_dir, "SELECT reason FROM rejections", ())]
    assert REGENERATED in stored, (
        f"commit answered {done.state!r} (replayed={done.replayed}), but the reply was not stored "
        f"(stored: {stored}; refused: {refused})")
