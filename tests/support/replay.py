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
    source, replayed = state_rows(settings.data_dir), state_rows(target_dir)
    differing = sorted(t for t in source if source[t] != replayed[t])
    assert not differing, f"tables that differ after the replay: {differing}; " + _first_difference(
        source, replayed, differing
    )
    assert state_hash(settings.data_dir) == state_hash(target_dir)
    return target_dir


def _first_difference(source: dict[str, list[tuple[Any, ...]]], replayed: dict[str, list[tuple[Any, ...]]],
                      tables: list[str]) -> str:
    """The rows of the first differing table that only one side has (a few of each), to read the failure."""
    table = tables[0]
    only_source = [r for r in source[table] if r not in replayed[table]][:3]
    only_replayed = [r for r in replayed[table] if r not in source[table]][:3]
    return f"{table}: only in the source {only_source}, only in the replay {only_replayed}"
