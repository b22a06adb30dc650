"""The writer's and the deriving stages' per-memory lookups must not grow with the user's history (found while
profiling a replay of 1,500 LoCoMo turns). Without an index of their own, SQLite answered each through the
agent's or the user's whole history: the guard's anti-pattern lookup (every derived memory) scanned every
memory of the agent, govern's exact-duplicate lookup (every atom) every atom of the agent, the facet lookup
(every preference or fact) every memory of the user with ``json_extract`` on each, and verify's subject
lookup every atom of the agent: quadratic over a long history (``benchmarks/history_lookups.py`` times them).

Measured in SQLite's own work (virtual machine steps, counted by a progress handler), not in seconds: on the
code before, each lookup took 40 times the steps on a 40 times longer history."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from altm.store import ShardSet
from benchmarks.history_lookups import fill_history, history_lookups


def _steps(shards: ShardSet, lookup: Callable[[], object]) -> int:
    """SQLite virtual machine steps (in hundreds) the lookup takes on the shard's connection."""
    db = shards.get(0)._db
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    db.set_progress_handler(tick, 100)
    try:
        lookup()
    finally:
        db.set_progress_handler(None, 0)
    return count


def test_the_per_memory_lookups_cost_the_same_on_a_forty_times_longer_history(tmp_path: Path) -> None:
    shards = ShardSet(tmp_path / "d", 1)
    try:
        fill_history(shards, 0, 100)
        short = {name: _steps(shards, f) for name, f in history_lookups(shards).items()}
        fill_history(shards, 100, 3900)
        long = {name: _steps(shards, f) for name, f in history_lookups(shards).items()}
        assert all(long[name] <= 3 * max(1, short[name]) for name in short), (short, long)
        # the earlier form of govern's lookup does grow: what the test would see without the index
        (before,) = [f for name, f in history_lookups(shards, before=True).items() if name == "govern: same content"]
        assert _steps(shards, before) > 10 * long["govern: same content"]
    finally:
        shards.close()
