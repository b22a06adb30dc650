"""Every derived memory is judged against every erased raw message of its user: the guard's cost per memory grows
with the erasures ever made, whatever the memory says.

Red team rt22 (scaling): 25 / 50 / 100 one-message sessions erased one by one, then 20 new turns in new sessions
about something else: the guard read 3,850 / 7,700 / 15,400 tombstones for those 20 turns (154 reads, each of
every tombstone of the user); SQLite VM steps 0.70 M / 0.87 M / 1.22 M and 0.66 / 0.78 / 1.37 s. The erasures
themselves grow quadratically (0.63 / 1.33 / 5.96 s; tombstone rows read 552 / 2,352 / 9,702): each one
re-derives scenes and capsules that are judged against every earlier tombstone, a scene statement by statement
(57,838 ``restates_terms`` calls for 100 erasures).
- ``WriteGuard._tombstone`` (altm/pipeline/writer/guard.py:430) reads ``tx.tombstones(scope, raw_only=True)``
  (altm/store/_tx/_tombstones.py:73: every tombstone of the user, its shingle and term hash lists decoded from
  JSON) and compares the memory with each one (guard.py:436-440; per statement in ``_statements``,
  guard.py:441-468): no index from a keyed shingle or term hash to the tombstones holding it.
"""

from __future__ import annotations

import pytest

from altm.core import Settings
from altm.pipeline.writer import guard
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, make_turn

ERASED = 30
LATER = 10


async def test_a_memory_is_judged_against_the_tombstones_it_shares_words_with(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(i, f"My locker code at the gym is {4400 + i}.", session=f"e{i}")
                          for i in range(ERASED)])
        await rt.run_until_idle()
        for i in range(ERASED):
            await app.erase(SCOPE, "session", session_id=f"e{i}")
        await rt.run_until_idle()
        assert app.admin.tombstones(SCOPE) >= ERASED

        judged = {"pairs": 0}
        for name in ("restates", "restates_terms"):
            original = getattr(guard, name)

            def counting(*args, _original=original, **kw):  # type: ignore[no-untyped-def]
                judged["pairs"] += 1
                return _original(*args, **kw)
            monkeypatch.setattr(guard, name, counting)
        for j in range(LATER):  # nothing of it was ever erased
            await rt.publish([make_turn(j, "We decided to deploy the billing service with Helm.",
                                        session=f"n{j}")])
            await rt.run_until_idle()
    assert judged["pairs"] <= 10 * LATER, (
        f"{judged['pairs']} memory/tombstone comparisons for {LATER} turns that share no word with the {ERASED} "
        "erased messages: every derived memory is compared with every tombstone of its user")

