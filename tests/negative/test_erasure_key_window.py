"""Found by the randomized replay check with operations overlapping (seed 8): an agent's erasure was requested
and, before the writer applied it, the agent ran a recall cycle and aborted it. The cycle's records were
sealed with the agent's key (the erasure had not destroyed it yet) and the source read them in time: it kept
the aborted cycle, applied after the erasure. The erasure then destroyed that key, so a replay could not open
the cycle's records and had no such cycle. What the log can no longer open is not applied any more: a record
names the keys it was sealed with and those of the record it was made from (``altm-sealed-by``), and the
writer skips it as shredded once one of them is destroyed, as a replay does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from altm.bus import host_record, lineage_headers, lineage_of
from altm.bus.sealing import MAGIC, is_sealed
from altm.core import Settings
from altm.wiring import plain
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

TURNS = [make_turn(1, "The release is on Friday.", session="s1"),
         make_turn(2, "The staging cluster runs in Dublin.", session="s2")]


@pytest.mark.parametrize("target", ["agent", "session"])
async def test_a_cycle_aborted_while_the_erasure_is_on_its_way_replays_equal(settings: Settings, tmp_path: Path,
                                                                           target: str) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        if target == "agent":
            await app.erase(SCOPE, "agent")
        else:
            await app.erase(SCOPE, "session", session_id="s1")
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-t9", "When is the release?", 800)  # not waited for
        await app.abort_turn(prepared.cycle_id, "randomized")
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT cycle_id FROM runtime_cycles WHERE cycle_id=?", (prepared.cycle_id,)) == []
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_turn_sent_while_its_agents_erasure_is_on_its_way_replays_equal(settings: Settings,
                                                                               tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        await app.erase(SCOPE, "agent")
        await rt.publish([make_turn(3, "The session cache moved to Redis.", session="s3")])  # not waited for
        await rt.run_until_idle()
    await replayed_equal(s, tmp_path / "replayed")


async def test_a_cycle_after_the_erasure_is_applied_stays(settings: Settings, tmp_path: Path) -> None:
    """Once the erasure is applied, the agent's new records get new keys: its next cycle is kept, in a replay
    too."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        await app.erase(SCOPE, "agent")
        await rt.run_until_idle()
        prepared = await app.prepare_turn(SCOPE, "s1", "s1-t9", "When is the release?", 800)
        await app.abort_turn(prepared.cycle_id, "randomized")
        await rt.run_until_idle()
    assert len(rows(s.data_dir, "SELECT cycle_id FROM runtime_cycles WHERE cycle_id=?", (prepared.cycle_id,))) == 1
    await replayed_equal(s, tmp_path / "replayed")


async def test_what_a_turn_leads_to_names_the_turns_key_on_the_log(settings: Settings) -> None:
    """The lineage the writer checks is on the log, in the clear beside the sealed values: every proposal and
    change made from a turn names the key the turn was sealed with, and nothing else."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, TURNS) as (rt, _app):
        stored = await plain(rt.log).read_all(["altm.turns", "altm.proposals", "altm.changes"])
    turn_kids = {r.value[len(MAGIC):len(MAGIC) + 32].decode() for r in stored if r.topic == "altm.turns"}
    assert len(turn_kids) == 2 and all(is_sealed(r.value) for r in stored)  # one key per session
    derived = [r for r in stored if r.topic != "altm.turns"]
    assert {r.topic for r in derived} == {"altm.proposals", "altm.changes"}
    assert all(len(lineage_of(r)) == 1 for r in derived)  # L0, L1, L2, links, trust: each from one session
    assert {kid for r in derived for kid in lineage_of(r)} == turn_kids


async def test_a_lineage_a_host_writes_on_its_turn_is_not_taken(settings: Settings) -> None:
    """A host that names a destroyed key in its turn's headers does not get what comes of its turn skipped (nor
    anything else): the lineage of a host record is the key it is sealed with, nothing it says."""
    s = settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})
    async with store_with(s, TURNS) as (rt, app):
        kids = {r.value[len(MAGIC):len(MAGIC) + 32].decode() for r in await plain(rt.log).read_all(["altm.turns"])}
        await app.erase(SCOPE, "session", session_id="s1")
        await rt.run_until_idle()
        keys = rt.keys
        assert keys is not None
        (destroyed,) = [kid for kid in kids if keys.destroyed(kid)]  # s1's; s2's stays
        hostile = host_record(s, make_turn(4, "The on-call rota changes on Monday.", session="s2"))
        await rt.log.publish_many([replace(hostile, headers=(*hostile.headers, *lineage_headers((destroyed,))))])
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0' AND content LIKE '%on-call%'")
