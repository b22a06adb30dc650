"""The verify sweep converges. It names the L2 atoms never verified or changed since their verdict, and counted
any change but verify's and review's as one: a use signal or a compression (the lifecycle's counters, nothing
verify reads) made an atom "changed" for ever, since verify then found the same verdict and stored nothing. Every
pass named the same atoms again (the oldest first, up to its limit of 500: atoms in use filled it and the
never-verified ones behind them were never reached). A reviewed atom is not named either: verify gives it no
verdict."""

from __future__ import annotations

from datetime import timedelta

from altm.core import ControlAction, ControlEvent, Settings
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.turns import SCOPE, T0, make_turn


async def test_a_sweep_after_a_compression_names_nothing_twice(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "The release is on Friday.", session="s1"),
                          make_turn(2, "Our deploy day is Tuesday.", session="s1")])
        await rt.run_until_idle()
        atoms = [str(r["memory_id"]) for r in rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L2'")]
        assert len(atoms) == 2 and await app.admin.sweep() == 0  # verify judged both as they came
        await rt.publish([ControlEvent(event_id="ctl_compress", scope=SCOPE, timestamp=T0 + timedelta(days=40),
                                       action=ControlAction.LIFECYCLE,
                                       payload={"op": "compress", "levels": {a: 1 for a in atoms}})])
        await rt.run_until_idle()
        assert [r["lc_compression"] for r in rows(s.data_dir, "SELECT lc_compression FROM memories "
                                                               "WHERE layer='L2'")] == [1, 1]
        first = await app.admin.sweep()
        await rt.run_until_idle()
        second = await app.admin.sweep()
    assert (first, second) == (0, 0)  # a compression changes nothing verify reads


async def test_a_sweep_does_not_name_a_reviewed_atom(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as deployment:
        rt, app = runtime_of(deployment), deployment.app
        await rt.publish([make_turn(1, "Our deploy day is Tuesday.", session="s1")])
        await rt.run_until_idle()
        (atom,) = rows(s.data_dir, "SELECT memory_id, valid_from FROM memories WHERE layer='L2'")
        await app.review_decide(SCOPE, atom["memory_id"], "approve")
        await rt.run_until_idle()
        # changed since the review by something verify would judge again (here: its evidence, written directly)
        from altm.store import ShardSet
        shards = ShardSet(s.data_dir, s.partitions)
        try:
            (shard,) = [sh for sh in shards.existing() if sh.memory_row(str(atom["memory_id"])) is not None]
            with shard.transaction() as tx:
                old = tx.memory_row(str(atom["memory_id"]))
                assert old is not None
                tx.update_memory(old, {**old, "attributes": old["attributes"].replace("Tuesday", "Tuesday ")},
                                 at="2999-01-01T00:00:00+00:00", proposal_id="p-test", actor="extract")
        finally:
            shards.close()
        assert await app.admin.sweep() == 0  # verify would give it no verdict: naming it is work for nothing
