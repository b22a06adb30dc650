"""``altm state-hash`` checks once, before it reads, that no pipeline holds the data dir's log; a pipeline that starts
while the hash is being read (``altm serve`` restarted by its supervisor, a cron ``altm ingest``) applies its
commits between two shards, and the hash printed is, again, that of a state that never existed.

Finding: the fix of 39447b2 (altm/wiring/__init__.py:62-68) calls ``writer_running`` (altm/bus/embedded/_log.py:366-
377) once and lets go of the log's lock file at once: ``writer_running`` takes ``LOCK_SH`` on ``log.db.lock`` and
releases it before returning, so nothing keeps a writer out while ``_hash`` -> ``state_rows`` (altm/store/_stats.py)
then reads the shard files one after another, each with its own autocommit reads. A writer that starts after the
check (``EmbeddedLog.start`` takes ``LOCK_EX`` without hindrance, altm/bus/embedded/_log.py:76-82) applies what waits
on the log; shards read before its commits and shards read after them are hashed together. The refusal covers only
a pipeline that was already running when the command started (a time-of-check/time-of-use gap), so
``test_state_hash_beside_pipeline.py``'s promise ("``state_hash`` never returns a hash of a state that mixes two
moments") does not hold.

Reproduction: turns of two users (two partitions) wait on the log, unapplied, with no pipeline running. Call
``state_hash``; when it comes to the second user's shard, an embedded pipeline starts (the check passed long ago)
and applies them. ``state_hash`` returns a hash equal neither to the state before nor to the state after.

Expected: ``state_hash`` returns the hash of one real state (before or after) or refuses with ``DataDirError``:
e.g. it holds a shared lock on ``log.db.lock`` for the whole read (a writer starting meanwhile is then refused with
"open for writing by another process", or waits), not only for the instant of the check.
"""

from __future__ import annotations

import asyncio

import pytest

import altm.store._stats as stats_module
from altm.bus import BusError
from altm.core import Scope, Settings, partition_for
from altm.store import DataDirError, Shard
from altm.wiring import state_hash
from tests.support.memories import embedded, runtime_of
from tests.support.turns import SCOPE, make_turn

OTHER = Scope(tenant_id="acme", workspace_id="platform", user_id="lee", agent_id="coder")


async def _apply_waiting(settings: Settings) -> int:
    """A pipeline started now (as ``altm serve`` would be): it applies what waits on the log."""
    async with embedded(settings) as d:
        return await runtime_of(d).run_until_idle()


async def test_a_pipeline_started_while_the_hash_is_read_is_not_mixed_in(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    first, second = partition_for(SCOPE.home, s.partitions), partition_for(OTHER.home, s.partitions)
    assert first < second  # the shards are read in partition order: SCOPE's first
    async with embedded(s) as d:
        rt = runtime_of(d)
        await rt.publish([make_turn(1, "We use PostgreSQL 15 for billing."),
                          make_turn(1, "We use Redis 7 for sessions.", scope=OTHER)])
        await rt.run_until_idle()
    async with embedded(s) as d:  # the next turns of both users are on the log, not applied; then it stops
        await runtime_of(d).publish([
            make_turn(2, "The billing service moves from Flask to FastAPI.", session="s2"),
            make_turn(2, "The session store moves from Redis 7 to Valkey 8.", session="s2", scope=OTHER)])
    before = state_hash(s.data_dir, s)  # no pipeline runs: a state of its own
    started: list[int | str] = []

    class Stepping(Shard):
        """A shard read by the hash; when the second user's comes up, a pipeline starts and applies what waits."""

        def open(self) -> Shard:
            if self.partition == second and not started:
                try:  # this runs in the hash's thread: the pipeline gets an event loop of its own
                    started.append(asyncio.run(_apply_waiting(s)))
                except BusError as exc:  # kept out while the hash reads: fine
                    started.append(str(exc))
            return super().open()

    monkeypatch.setattr(stats_module, "Shard", Stepping)
    try:
        during: str | None = await asyncio.to_thread(state_hash, s.data_dir, s)
    except DataDirError:
        during = None  # refused: fine
    monkeypatch.undo()
    assert started, "the hash never read the second user's shard"
    async with embedded(s) as d:
        await runtime_of(d).run_until_idle()
    after = state_hash(s.data_dir, s)
    if during is None:
        return
    assert before != after
    assert during in (before, after), (
        f"state_hash returned {during[:12]}…, the hash of neither the state before ({before[:12]}…) nor after "
        f"({after[:12]}…): the check passed, then a pipeline started (it applied {started[0]!r} records) between "
        f"partition {first} and partition {second}")
