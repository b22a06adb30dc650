"""An open cycle the writer has not stored yet is forgotten after 10,000 later prepares: its commit is refused.

What a caller expects (README, runtime protocol): ``commit_turn`` records the answer of a cycle ``prepare_turn``
returned; the process "remembers the cycles it prepared ... for a commit that follows its prepare before the
writer has stored it" (altm/app/_cycles.py). ``CycleBook.remember`` keeps the 10,000 most recently touched
cycles and drops the oldest whatever its state (``self._recent.popitem(last=False)``), and ``CycleBook.get``
otherwise knows only what the writer stored. While the writer lags (Kafka workers restarting or rebalancing,
an embedded runtime behind a burst of turns), every cycle prepared more than 10,000 prepares ago (over all
users and agents of the process) is neither held nor stored: its commit and its abort answer "unknown cycle"
(HTTP 404) although its prepare was acknowledged and is on the log, and the agent's answer is lost.

Expected: an open cycle this process prepared stays committable until the writer has stored it (evict the
cycles the store already holds, or closed ones, before open ones it does not).
"""

from __future__ import annotations

from altm.app import ProtocolError
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]
OTHERS = 10_000  # CycleBook's capacity: the prepares of other agents while the writer is behind


async def test_an_open_cycle_stays_committable_while_the_writer_is_behind(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (_rt, app):
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-q", "When is the billing migration deadline?", 800)
        for i in range(OTHERS):  # the writer applies none of them yet
            await app.prepare_turn(SCOPE, f"busy-{i % 50}", f"t{i}", f"status update {i}", 64)
        try:
            done = await app.commit_turn(prepared.cycle_id, "December 15.", prepared.bundle.memory_ids)
            outcome = f"committed {done.cited_memory_ids}"
        except ProtocolError as exc:
            outcome = f"{type(exc).__name__}: {exc}"
    assert outcome.startswith("committed"), f"the commit of a prepared cycle the writer has not stored: {outcome}"
