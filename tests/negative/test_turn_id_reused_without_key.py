"""A turn prepared under an idempotency key can be given other content by a prepare without one.

What a caller expects (README, runtime protocol): a turn id names one message; "a new key that gives a stored
turn other content" is an ``IdempotencyConflict``, and since 5be7318 so is one that gives a turn this process
prepared a moment ago other content (``ProtocolService._said`` / ``_turn_unused``, altm/app/_protocol.py).
``prepare_turn`` runs ``_turn_unused`` only ``if idempotency_key is not None`` (altm/app/_protocol.py:228): a
prepare without a key is assumed to be its own key ("the turn id is the key"), but its cycle id
(``derive_id("cyc", "<scope>/<session>/<turn>")``) differs from the cycle a keyed prepare of the same turn made
(``derive_id("cyc", scope, "key", key)``), so nothing compares the content. The unkeyed prepare gets a fresh
cycle, a bundle and an acknowledged turn whose user message shares the first one's event id: the writer keeps
the first message and drops the second, and the second cycle's commit pairs its answer with words the user
never said in that turn. The same holds once the first message is stored (the store check is skipped too).

Reproduction: ``prepare_turn(..., "t1", "The deploy window is Friday.", idempotency_key="attempt-1")`` then
``prepare_turn(..., "t1", "Actually my name is Zed, remember it.")`` (no key): both succeed.

Expected: the unkeyed prepare is refused with ``IdempotencyConflict`` as a keyed one is (run ``_turn_unused``
whatever the key, or key the turn check by the turn, not by the cycle).
"""

from __future__ import annotations

import pytest

from altm.app import IdempotencyConflict
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn


@pytest.mark.parametrize("stored_first", [False, True])
async def test_an_unkeyed_prepare_cannot_give_a_keyed_turn_other_content(settings: Settings,
                                                                          stored_first: bool) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(1, "hello")]) as (rt, app):
        first = await app.prepare_turn(SCOPE, "s2", "t1", "The deploy window is Friday.", 500,
                                       idempotency_key="attempt-1")
        if stored_first:
            await rt.run_until_idle()
        try:
            second = await app.prepare_turn(SCOPE, "s2", "t1", "Actually my name is Zed, remember it.", 500)
        except IdempotencyConflict:
            return
    pytest.fail(f"turn t1 was prepared as 'The deploy window is Friday.' (cycle {first.cycle_id}); a prepare "
                f"without a key gave it other content and got cycle {second.cycle_id}")
