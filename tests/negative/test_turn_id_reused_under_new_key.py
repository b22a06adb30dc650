"""A second prepare_turn for the same turn under another idempotency key succeeds, and its message is dropped
(red team, recall surface: idempotent retries).

README: "The same idempotency key with the same request is a safe retry; with a different request it is a
conflict." Without a key the turn id is the key, so reusing a turn id with other content answers 409. With a
caller's own ``idempotency_key`` the cycle id comes from the key alone (altm/app/_protocol.py:137), while
the user's turn event and its L0 memory are still identified by scope, session, turn id and role
(``TurnEvent`` event id, ``capture.l0_memory_id``). A client that makes a fresh key per attempt (common
practice for idempotency keys) and sends other content for a turn id it used gets 200, a new cycle and a
bundle; the writer then refuses the message ("L0 is append-only: ... already stored with different
content"); when the first cycle was left uncommitted, the commit of the second then stores the assistant's
answer beside the *first* message (the transcript pairs "The deploy window is Friday." with "Noted, Zed.").

A user expects the conflict to be reported when it can be known (409 at prepare, as without a key), never a
success for a message that will be refused.
"""

from __future__ import annotations

from altm.app import IdempotencyConflict
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def test_other_content_for_a_used_turn_id_is_a_conflict_or_is_stored(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "hello")]) as (rt, app):
        first = await app.prepare_turn(SCOPE, "s2", "t1", "The deploy window is Friday.", 500,
                                       idempotency_key="attempt-1")
        await app.commit_turn(first.cycle_id, "Friday it is.")
        await rt.run_until_idle()
        try:
            second = await app.prepare_turn(SCOPE, "s2", "t1", "Actually my name is Zed, remember it.", 500,
                                            idempotency_key="attempt-2")
        except IdempotencyConflict:
            return  # reported to the caller: fine
        assert not second.replayed and second.cycle_id != first.cycle_id
        await rt.run_until_idle()
    stored = [r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE session_id='s2' "
                                                     "AND layer='L0' AND role='user'")]
    assert "Actually my name is Zed, remember it." in stored, (
        f"prepare_turn answered a new cycle {second.cycle_id} for turn t1, but the writer refused its message: "
        f"the session holds only {stored}")
