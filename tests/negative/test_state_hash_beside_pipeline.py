"""``altm state-hash`` run while a pipeline writes the data dir (``altm serve``, ``altm ingest``) prints, without a
word, the hash of a state that never existed: shards read before the writer's last commits mixed with shards read
after them. It refuses only when the embedded vector index happens to be held (the default embedder); with
``ALTM_EMBEDDER=none`` or a Qdrant server (``ALTM_VECTORS=http://...``) nothing stops it.

Finding: ``state_hash`` (altm/wiring/__init__.py:57-68) refuses beside a running pipeline only through
``VectorIndexBusy``, i.e. only when it must open the embedded vector index; it never checks whether a process holds
the data dir's log for writing (``DATA_DIR/log.db.lock``, altm/bus/embedded/_log.py:74-83). ``state_rows``
(altm/store/_stats.py:48-67) then reads each shard file in turn, each table with its own autocommit ``SELECT`` (no
read transaction spans a shard, let alone the data dir), so commits the writer makes meanwhile land in the tables and
shards read after them and not in those read before. README ("``altm state-hash`` asks you to stop the pipeline
first"; "the same input gives the same ``altm state-hash``") promises a hash an operator can compare with a replay's;
beside ``altm serve`` without the embedded index they get a hash of neither the state before nor the state after,
exit 0, and conclude that the replay diverged (or that it did not).

Reproduction: (1) hold an embedded deployment with ``ALTM_EMBEDDER=none`` (as ``altm serve`` does) and run
``altm state-hash --data-dir DIR``: it prints a hash and exits 0. (2) With turns of two users in two partitions
waiting on the log, let the pipeline apply them while ``state_hash`` is between the two users' shards: the result
equals neither the hash before nor the hash after.

Expected: while another process (or handle) holds the data dir's log for writing, ``altm state-hash`` refuses with
one line saying a pipeline runs on the data dir and must be stopped first (exit != 0), as it already does when the
vector index is held; and ``state_hash`` never returns a hash of a state that mixes two moments (it refuses with
``DataDirError``, or reads one consistent state).
"""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

import altm.store._stats as stats_module
from altm.core import Scope, Settings, partition_for
from altm.interfaces.cli import app
from altm.store import DataDirError, Shard
from altm.wiring import state_hash
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, make_turn

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
OTHER = Scope(tenant_id="acme", workspace_id="platform", user_id="lee", agent_id="coder")


async def test_state_hash_beside_a_running_pipeline_is_refused(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with embedded(s) as d:  # what `altm serve` holds while it runs
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "The staging cluster runs on Kubernetes 1.29 in Frankfurt.")])
        await rt.run_until_idle()
        result = runner.invoke(app, ["state-hash", "--data-dir", str(s.data_dir)], env=ENV)
    assert result.exit_code != 0, (
        f"state-hash printed {result.output.strip()!r} while a pipeline holds the data dir for writing")
    assert "error:" in result.output


async def test_state_hash_never_mixes_two_states(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    first, second = partition_for(SCOPE.home, s.partitions), partition_for(OTHER.home, s.partitions)
    assert first < second  # the shards are read in partition order: SCOPE's first
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We use PostgreSQL 15 for billing."),
                          make_turn(1, "We use Redis 7 for sessions.", scope=OTHER)])
        await rt.run_until_idle()
    before = state_hash(s.data_dir, s)  # the pipeline stopped: a state of its own
    applied: list[int] = []
    async with embedded(s) as d:  # running again (as `altm serve` does)
        rt = runtime_of(d)
        # the next turns of both users are on the log, not yet applied (the pipeline runs between its steps)
        await rt.publish([make_turn(2, "The billing service moves from Flask to FastAPI.", session="s2"),
                          make_turn(2, "The session store moves from Redis 7 to Valkey 8.", session="s2",
                                    scope=OTHER)])
        loop = asyncio.get_running_loop()

        class Stepping(Shard):
            """A shard read by the hash; when the second user's comes up, the pipeline applies what waits."""

            def open(self) -> Shard:
                if self.partition == second and not applied:
                    applied.append(asyncio.run_coroutine_threadsafe(rt.run_until_idle(), loop).result(60))
                return super().open()

        monkeypatch.setattr(stats_module, "Shard", Stepping)
        try:
            during: str | None = await asyncio.to_thread(state_hash, s.data_dir, s)
        except DataDirError:
            during = None  # refused beside a running pipeline: fine
        monkeypatch.undo()
        await rt.run_until_idle()
    after = state_hash(s.data_dir, s)
    if during is None:
        return  # refused: the expected answer beside a running pipeline
    assert applied and applied[0] > 0, "the pipeline had nothing to apply while the hash was read"
    assert before != after
    assert during in (before, after), (
        f"state_hash returned {during}, the hash of neither the state before ({before[:12]}…) nor after "
        f"({after[:12]}…): partition {first} was read before the writer's commits, partition {second} after")

