"""A full replay of a data dir that was itself rebuilt by a partial replay brings erased content back.

Finding: ``replay_into`` (altm/wiring/_replay.py:121-123) carries the source's tombstones *pending* whenever the
replay starts at the log's start (``carry_erasures(..., pending=not partial)``), on the assumption written in
``carry_erasures``'s docstring (altm/wiring/_replay.py:43-44): "an erasure's tombstones refuse nothing until
the replay applies that erasure again". ``ShardTx.carry_tombstone`` (altm/store/_tx/_tombstones.py:152) makes
every tombstone that names an ``erasure_id`` pending, and only ``activate_tombstones`` (called from the writer's
erase op, altm/pipeline/writer/ops/erasure.py:41, with the erase proposal's id) ever makes it refuse again.
But a data dir's tombstones do not all come from erasures on its own log: a replay ``--from-offset`` /
``--from-time`` carries the erasures made before its start point (active, ``forgets=True, pending=False``), and
their control events are not on the new data dir's log. When that data dir is replayed again from its start
(to switch embedders, as the README suggests, or to move it), those tombstones are carried pending and stay
pending for ever: the erasure they wait for is never met. They refuse nothing, so the erased content said again
(here: a re-statement that the first data dir refused) is stored as a message and an atom, and
recalled. ``altm state-hash`` does not even see the pending flag (altm/store/_stats.py:34-35).

Reproduction: one partition; the user says a secret in session s1 and something else in s2; s1 is erased; the
secret is said again in s3 (refused by the write guard: "matches erased content"). Replay that data dir
``--from-offset 2`` (only the re-statement) into R1: it is refused there too (the tombstones were carried active).
Then replay R1 from its start into R2.

Expected: R2 equals R1 (every state table and the state hash): the re-statement is refused in R2 as in R1, no
memory of R2 holds the erased text, and no tombstone is left pending once the replay is done. A tombstone whose
erasure is not on the log being replayed must be carried active (e.g. carry pending only the tombstones whose
``erasure_id`` names an erase proposal or control event of the records read, or activate the still-pending
ones when the replay ends).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from altm.core import Settings
from altm.wiring import replay_into
from tests.support.memories import store_with
from tests.support.replay import assert_same_state
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SECRET = "My sister Maya is moving to Leeds for a nursing job in the spring."


async def test_a_replay_of_a_partially_replayed_data_dir_keeps_refusing_erased_content(
        settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "partitions": 1, "retired_key_grace_s": 0.0})
    async with store_with(s, [make_turn(1, SECRET, session="s1"),
                              make_turn(2, "Priya owns the billing service.", session="s2")]) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        await asyncio.sleep(0.01)  # a later millisecond: the re-statement is published after the erasure
        await rt.publish([make_turn(3, SECRET, session="s3")])
        await rt.run_until_idle()
    assert not rows(s.data_dir, "SELECT 1 FROM memories WHERE content LIKE '%Leeds%'")
    assert rows(s.data_dir, "SELECT 1 FROM rejections WHERE reason LIKE '%matches erased content%'")

    first = tmp_path / "from-offset"  # turns offset 2: the re-statement only (the erasure came before it)
    await replay_into(s.data_dir, first, settings=s, from_offset=2)
    assert not rows(first, "SELECT 1 FROM memories WHERE content LIKE '%Leeds%'")  # holds: carried active
    assert rows(first, "SELECT 1 FROM rejections WHERE reason LIKE '%matches erased content%'")

    second = tmp_path / "again"  # the data dir R1 replayed from its own log's start
    await replay_into(first, second, settings=s.model_copy(update={"data_dir": first}))
    resurrected = rows(second, "SELECT layer, content FROM memories WHERE content LIKE '%Leeds%'")
    assert resurrected == [], f"erased content stored again by the replay: {resurrected}"
    assert rows(second, "SELECT tombstone_id FROM tombstones WHERE pending = 1") == []
    assert_same_state(first, second, "after replaying the partially replayed data dir")
