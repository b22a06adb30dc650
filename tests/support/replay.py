"""Replay a data dir into a fresh one and check the rebuilt state equals the source's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from altm.core import Settings
from altm.store import state_rows
from altm.wiring import replay_into, state_hash


async def replayed_equal(settings: Settings, target_dir: Path) -> Path:
    """Replay ``settings.data_dir`` into ``target_dir``; assert every state table and the state hash equal the
    source's (the differing tables are named on failure). Returns ``target_dir`` for further checks."""
    await replay_into(settings.data_dir, target_dir, settings=settings)
    assert_same_state(settings.data_dir, target_dir, "after the replay")
    return target_dir


def assert_same_state(source_dir: Path, other_dir: Path, what: str) -> None:
    """Every state table and the state hash of ``other_dir`` equal ``source_dir``'s (the differing tables, and
    the first difference, are named on failure)."""
    source, other = state_rows(source_dir), state_rows(other_dir)
    differing = sorted(t for t in source if source[t] != other.get(t))
    assert not differing, f"tables that differ {what}: {differing}; " + _first_difference(source, other, differing)
    assert state_hash(source_dir) == state_hash(other_dir)


def _first_difference(source: dict[str, list[tuple[Any, ...]]], replayed: dict[str, list[tuple[Any, ...]]],
                      tables: list[str]) -> str:
    """The rows of the first differing table that only one side has (a few of each), to read the failure."""
    table = tables[0]
    only_source = [r for r in source[table] if r not in replayed.get(table, [])][:3]
    only_replayed = [r for r in replayed.get(table, []) if r not in source[table]][:3]
    return f"{table}: only in the source {only_source}, only in the replay {only_replayed}"
