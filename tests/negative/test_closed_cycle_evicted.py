"""A cycle committed here, its close not yet stored, is evicted first: a second commit or an abort then succeeds.

What a caller expects (README, runtime protocol): a committed cycle is committed once; a commit with other
content is an ``IdempotencyConflict`` and an abort of it a ``CycleStateError``. Since 1e89d4c ``CycleBook._evict``
(altm/app/_cycles.py:79-87) keeps an open cycle only this process knows, but evicts any closed one at once
(``cycle.state is not CycleState.PREPARED`` is enough), without asking whether the writer has stored the close.
While the writer lags (the same window the open-cycle fix is for: Kafka workers rebalancing, a burst of turns),
a cycle committed here and pushed out by the book's capacity of later prepares falls back to what the store
holds, its ``prepared`` row: another commit with another answer, or an abort, is published and acknowledged.
The writer then keeps the first close and refuses the second (``record_cycle``: "already committed"): the
caller was told its answer was committed, or its abort done, and neither is true. This is not the known limit of
``test_cycle_closed_on_the_log_only.py`` (another process or a restart): this process made the close and
dropped it itself.

Reproduction: the book's capacity set to 3 (it is 10,000; ``test_open_cycle_evicted.py`` runs the full count):
prepare and store a cycle, commit it (the writer has not applied the commit), prepare four other turns, then
commit the first cycle again with another answer, or abort it.

Expected: a closed cycle whose close the writer has not stored is kept as an open one is (evict closed cycles
once the store holds their close, or compare the stored state before evicting).
"""

from __future__ import annotations

from typing import Literal

import pytest

from altm.app import CycleStateError, IdempotencyConflict, MemoryApp
from altm.core.settings import Settings
from altm.pipeline import EmbeddedRuntime
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]


async def _committed_then_pushed_out(rt: EmbeddedRuntime, app: MemoryApp) -> str:
    app.cycles._capacity = 3  # the book's 10,000 later prepares, in small
    prepared = await app.prepare_turn(SCOPE, "s1", "s1-q", "When is the billing migration deadline?", 800)
    await rt.run_until_idle()  # the writer stores the prepared cycle
    await app.commit_turn(prepared.cycle_id, "December 15.")  # on the log; the writer has not applied it
    for i in range(4):  # other agents' prepares while the writer is behind
        await app.prepare_turn(SCOPE, f"busy-{i}", f"t{i}", f"status update {i}", 64)
    return prepared.cycle_id


@pytest.mark.parametrize("second", ["commit", "abort"])
async def test_a_commit_made_here_is_not_forgotten_before_the_writer_stores_it(
        settings: Settings, second: Literal["commit", "abort"]) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        cycle_id = await _committed_then_pushed_out(rt, app)
        try:
            if second == "commit":
                await app.commit_turn(cycle_id, "January 3.")
            else:
                await app.abort_turn(cycle_id, "user left")
        except (IdempotencyConflict, CycleStateError):
            return
    pytest.fail(f"a second close ({second}) of cycle {cycle_id}, committed here a moment ago ('December 15.'), "
                "was accepted")
