"""A replay's summary counts control events it could not open (and did not apply) as replayed.

Finding: ``read_host_records`` keeps the control records an erasure shredded (``keep_shredded=True``,
altm/app/replay.py:50-52: a replay needs to know where a retention pass it cannot open was) but drops the
shredded turns (``SealedBus.read_all`` without ``keep_shredded``, altm/bus/sealing/_bus.py:85). ``replay_into``
then reports ``ReplaySummary(events=len(records))`` (altm/wiring/_replay.py:124-127), and ``altm replay``
prints "replayed {events} events" (altm/interfaces/cli/admin.py:174). ``replay_records`` skips every shredded
control event (altm/app/replay.py:121-125: nothing to apply), so a pin or a use signal the user's erasure
shredded counts as replayed, while the user's turns, shredded by the same erasure, are not counted at all and
nothing says they were skipped. After an erasure of a user the operator reads "replayed 3 events" where one
event (the erasure) was applied and four records were skipped.

Reproduction: two messages of one user in two sessions, a pin and a helpful signal on one of them (control
events sealed under the user's key), then an erasure of the user (keys destroyed, grace 0); replay the data
dir.

Expected: the summary counts as replayed only the events the replay applied: here 1 (the erasure, which stays
readable); the shredded records are left out of that count (and, better, reported as skipped: 4).
"""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from altm.wiring import replay_into
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def test_a_replay_does_not_count_shredded_control_events_as_replayed(settings: Settings,
                                                                           tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, "We deploy the billing service on Tuesdays.", session="s1"),
                              make_turn(2, "Priya owns the billing service.", session="s2")]) as (rt, app):
        (message,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND session_id='s1'")
        await app.feedback(SCOPE, [str(message["memory_id"])], "pin")
        await rt.run_until_idle()
        await app.feedback(SCOPE, [str(message["memory_id"])], "helpful")
        await rt.run_until_idle()
        await app.erase(SCOPE, "user")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM memories") == []
    summary = await replay_into(s.data_dir, tmp_path / "replayed", settings=s)
    assert rows(tmp_path / "replayed", "SELECT 1 FROM memories") == []
    assert summary.events == 1, f"{summary.events} events reported replayed; only the erasure could be applied"
