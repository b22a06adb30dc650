"""Each use signal of a memory re-read every signal the memory ever had: ``signal`` (altm/pipeline/writer/ops/
lifecycle.py) calls ``tallied`` -> ``ShardTx.signal_tally`` (altm/store/_tx/_reads.py), four queries over all of
the memory's ``lifecycle_signals`` rows. A memory shown in every bundle gets one ``injected`` signal a turn, so its
n-th signal cost O(n) (red team rt24: 200 / 800 / 3,200 signals stored -> ~7,800 / 27,000 / 104,000 SQLite VM
steps for the next one). Schema 28 keeps each memory's count of each kind (``signal_counts``, kept by triggers)
and indexes the signals by memory, kind and order."""

from __future__ import annotations

from datetime import timedelta

from altm.core import ControlAction, ControlEvent, Settings, partition_for
from tests.support.memories import embedded, runtime_of
from tests.support.rows import rows
from tests.support.sqlite_work import vm_steps
from tests.support.turns import SCOPE, T0, make_turn


async def _steps_per_signal(settings: Settings, stored: int) -> float:
    s = settings.model_copy(update={"embedder": "none", "data_dir": settings.data_dir / f"n{stored}"})
    async with embedded(s) as deployment:
        rt = runtime_of(deployment)
        await rt.publish([make_turn(1, "I prefer green tea.", session="a")])
        await rt.run_until_idle()
        (m,) = rows(s.data_dir, "SELECT memory_id, lc_injected FROM memories WHERE layer='L0'")

        def injected(i: int) -> ControlEvent:
            return ControlEvent(event_id=f"ctl-inj-{i}", scope=SCOPE, timestamp=T0 + timedelta(minutes=i),
                                action=ControlAction.FEEDBACK, target_ids=(str(m["memory_id"]),), session_id="a",
                                payload={"signal": "injected"})

        for j in range(0, stored, 500):
            await rt.publish([injected(i) for i in range(j, min(stored, j + 500))])
            await rt.run_until_idle()
        conn = rt.shards.get(partition_for(SCOPE.home, s.partitions))._db
        with vm_steps(conn, 100) as steps:
            await rt.publish([injected(stored + i) for i in range(20)])
            await rt.run_until_idle()
    (after,) = rows(s.data_dir, "SELECT lc_injected FROM memories WHERE memory_id=?", (m["memory_id"],))
    assert after["lc_injected"] == stored + 20  # every signal counted
    return steps.n / 20


async def test_a_use_signal_costs_the_same_however_often_the_memory_was_used(settings: Settings) -> None:
    few, many = await _steps_per_signal(settings, 200), await _steps_per_signal(settings, 1_600)
    assert many <= 2 * few, (
        f"one more signal of a memory used 200 → 1,600 times: {few * 100:,.0f} → {many * 100:,.0f} VM steps "
        f"(×{many / few:.1f}): each signal re-reads every earlier one")
