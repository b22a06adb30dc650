"""A retention (or compaction) pass put every id of an agent into one control event, whose payload is capped at
64 KiB: past some 1,680 memories of one agent due, the pass raised before it published anything, for every user of
the data dir, and again at every later pass (the backlog only grows). Red team rt24: 411 / 821 / 1,641 ids made
16.4 / 32.4 / 64.4 KB; 1,700 raised "payload is 66374 bytes, over the limit of 65536"; compaction failed at 1,734
(71,122 bytes). ``AdminService.retention`` / ``compaction`` (altm/app/_admin.py) built one payload per agent.
Each agent's memories go in parts of at most ``LIFECYCLE_PART`` now, an event each."""

from __future__ import annotations

from datetime import timedelta

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, colocated_scope, make_turn

BUSY = 1_700  # messages of one agent past retention (39 bytes of payload each)


async def test_a_retention_pass_forgets_a_busy_agents_backlog(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30})
    small = colocated_scope(s.partitions)
    turns = [make_turn(i, f"ok {i}", session=f"s{i // 50}") for i in range(BUSY)]
    turns.append(make_turn(1, "The quokka offsite is in Perth.", scope=small, session="x"))
    async with store_with(s, turns) as (rt, app):
        named = await app.admin.retention(T0 + timedelta(days=400))
        await rt.run_until_idle()
    left = rows(s.data_dir, "SELECT user_id, COUNT(*) AS n FROM memories WHERE layer = 'L0' GROUP BY user_id")
    assert named == BUSY + 1
    assert left == [], f"nothing past retention was forgotten, the small user's message neither: {left}"


async def test_a_compaction_pass_survives_a_busy_agent(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    turns = [make_turn(i, f"ok {i}", session=f"s{i // 50}") for i in range(BUSY)]
    async with store_with(s, turns) as (rt, app):
        named = await app.admin.compaction(T0 + timedelta(days=400))
        await rt.run_until_idle()
    assert named > BUSY
    assert rows(s.data_dir, "SELECT COUNT(*) AS n FROM memories WHERE lc_compression = 0 AND user_id = ?",
                (SCOPE.user_id,))[0]["n"] == 0
