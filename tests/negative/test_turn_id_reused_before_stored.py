"""A turn id given other content under a new idempotency key is accepted while the first message is on its way.

What a caller expects (README, runtime protocol): "a new key that gives a stored turn other content (a turn id
names one message)" is a conflict (``test_turn_id_reused_under_new_key.py``). ``ProtocolService._turn_unused``
(altm/app/_protocol.py) checks only the store (``self.recall.memory``): a turn this process prepared a moment
ago, whose message is on the log and not yet written (the writer is behind, the Kafka workers lag, or two
prepares of a client that retries with a fresh key per attempt arrive together), is not seen, although the
``CycleBook`` holds its cycle. The second prepare gets 200, a cycle of its own and a bundle; both user turns
share an event id, so the writer keeps the first message and drops the second, and the second cycle's commit
pairs its answer with the first message.

Expected: the second prepare is refused with ``IdempotencyConflict``, as it is once the writer has stored the
first message.
"""

from __future__ import annotations

from altm.app import IdempotencyConflict
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def test_other_content_for_a_turn_id_on_its_way_is_a_conflict(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "hello")]) as (rt, app):
        first = await app.prepare_turn(SCOPE, "s2", "t1", "The deploy window is Friday.", 500,
                                       idempotency_key="attempt-1")
        try:  # the writer has not applied the first prepare yet
            second = await app.prepare_turn(SCOPE, "s2", "t1", "Actually my name is Zed, remember it.", 500,
                                            idempotency_key="attempt-2")
        except IdempotencyConflict:
            return  # reported to the caller: fine
        await app.commit_turn(second.cycle_id, "Noted, Zed.")
        await rt.run_until_idle()
    stored = [str(r["content"]) for r in rows(s.data_dir, "SELECT content FROM memories WHERE session_id='s2' "
                                                          "AND layer='L0' ORDER BY role DESC")]
    assert "Actually my name is Zed, remember it." in stored, (
        f"prepare_turn answered a second cycle ({second.cycle_id}, beside {first.cycle_id}) for turn t1 with "
        f"other content; the session holds only {stored}")
