"""Runtime cycles live on the log: control events the writer stores, so a replay rebuilds them and the API
process never writes a shard (issue 12, bug 6: after `altm replay` an open cycle's commit failed)."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from altm.wiring import open_embedded, replay_into
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


async def test_an_open_cycle_commits_after_a_replay(settings: Settings, tmp_path: Path) -> None:
    async with store_with(settings, [make_turn(1, "The deadline is December 15.")]) as (rt, app):
        prepared = await app.prepare_turn(SCOPE, "s2", "s2-t1", "When is the deadline?", 800)
        await rt.run_until_idle()
        (stored,) = rows(settings.data_dir, "SELECT state, bundle_memory_ids, bundle FROM runtime_cycles")
        assert stored["state"] == "prepared" and stored["bundle"] is None  # the quoted text is not kept
        (audit,) = rows(settings.data_dir, "SELECT actor FROM audit_log WHERE target_table='runtime_cycles'")
        assert audit["actor"] == "protocol"  # written by the writer, from the log
    fresh = tmp_path / "fresh"
    await replay_into(settings.data_dir, fresh, settings=settings)
    async with open_embedded(settings.model_copy(update={"data_dir": fresh})) as deployment:
        cited = prepared.bundle.memory_ids[:1]
        done = await deployment.app.commit_turn(prepared.cycle_id, "December 15.", cited)
        assert done.cited_memory_ids == cited and not done.replayed
        retried = await deployment.app.prepare_turn(SCOPE, "s2", "s2-t1", "When is the deadline?", 800)
        assert retried.replayed and retried.cycle_id == prepared.cycle_id
        assert retried.bundle.memory_ids == prepared.bundle.memory_ids  # rebuilt from the stored ids
        assert deployment.runtime is not None
        await deployment.runtime.run_until_idle()
    (closed,) = rows(fresh, "SELECT state, commit_hash FROM runtime_cycles")
    assert closed["state"] == "committed" and closed["commit_hash"]


async def test_a_commit_right_after_prepare_does_not_wait_for_the_writer(settings: Settings) -> None:
    async with store_with(settings, [make_turn(1, "The deadline is December 15.")]) as (_, app):
        prepared = await app.prepare_turn(SCOPE, "s2", "t1", "When is the deadline?", 800)
        assert rows(settings.data_dir, "SELECT 1 FROM runtime_cycles") == []  # not applied yet
        done = await app.commit_turn(prepared.cycle_id, "December 15.")
        assert done.cycle_id == prepared.cycle_id
