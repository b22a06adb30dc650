"""After a session erasure the process's cycle book is no longer bounded: it grows with every later prepare.

Finding: ``CycleBook`` (altm/app/_cycles.py) keeps the cycles this process touched, "bounded, most recent kept"
(capacity 10,000). ``_evict`` (lines 79-87) only forgets a cycle whose state the store holds
(``self._stored.find(cycle_id)`` returns a row at least as advanced), looks at no more than the ``EVICT_SCAN``
(256) oldest entries, and ``remember`` stops evicting at the first pass that finds none (line 75). An erasure of a
session (or an agent, or a user) deletes that owner's ``runtime_cycles`` rows (altm/store/_tx/_erasure.py
``erase_records``, the ``("runtime_cycles", ...)`` entry), but leaves its cycles in the book: they are never
stored again, so they can never be evicted. Once 256 such cycles are the oldest in the book (one session of 256
turns erased — any agent key may prepare them and erase its own session), no eviction ever succeeds again: the
book keeps every later cycle of every tenant, each with its bundle (the quoted memories, up to the token
budget), and every ``prepare_turn``/``commit_turn``/``abort_turn`` runs 256 cycle look-ups over every shard
(``CycleQueries.find`` tries each shard) before giving up. Memory grows without bound for the life of the
process even though the writer is fully caught up (the documented exception is only a writer that lags).

Reproduction: the book's capacity set to 300 (it is 10,000: the same bound, in small). Prepare 256 turns in
session "doomed" and let the writer store them; erase the session and let the writer apply it; prepare 400 turns
in other sessions, the writer catching up every 50; then one more prepare.

Expected: with the writer caught up, the book holds at most its capacity (plus the cycle just prepared): a
cycle the store no longer holds and this process did not change since it was stored is evictable (e.g. drop the
erased owner's cycles from the book when the erasure is published, as ``forget_bundles`` already drops their
bundles, or evict entries whose store row is gone once they were seen stored; and do not let a window of
unevictable entries stop eviction for good).
"""

from __future__ import annotations

from altm.app._cycles import EVICT_SCAN
from altm.core.settings import Settings
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

HISTORY = [make_turn(1, "The deadline for the billing migration is December 15.", session="s1")]
CAPACITY = 300  # the book's 10,000, in small
LATER = 400


async def test_the_cycle_book_stays_bounded_after_a_session_erasure(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, HISTORY) as (rt, app):
        app.cycles._capacity = CAPACITY
        for i in range(EVICT_SCAN):
            await app.prepare_turn(SCOPE, "doomed", f"d{i}", f"scratch note {i}", 64)
        await rt.run_until_idle()
        await app.erase(SCOPE, "session", session_id="doomed", reason="user asked")
        await rt.run_until_idle()
        for i in range(LATER):  # other sessions (other tenants alike): the writer keeps up
            await app.prepare_turn(SCOPE, f"busy-{i % 20}", f"t{i}", f"status update {i}", 64)
            if i % 50 == 49:
                await rt.run_until_idle()
        await rt.run_until_idle()
        await app.prepare_turn(SCOPE, "s1", "s1-last", "When is the billing migration deadline?", 800)
        held = len(app.cycles._recent)
    # actual: 657 (every cycle prepared since the erasure is kept; no eviction succeeds any more)
    assert held <= CAPACITY + 1, f"the cycle book holds {held} cycles with a capacity of {CAPACITY}"
