"""Replay a data dir into a fresh one and check the rebuilt state equals the source's."""

from __future__ import annotations

from pathlib import Path

from altm.core import Settings
from altm.store import state_rows
from altm.wiring import replay_into, state_hash


async def replayed_equal(settings: Settings, target_dir: Path) -> Path:
    """Replay ``settings.data_dir`` into ``target_dir``; assert every state table and the state hash equal the
    source's (the differing tables are named on failure). Returns ``target_dir`` for further checks."""
    await replay_into(settings.data_dir, target_dir, settings=settings)
    source, replayed = state_rows(settings.data_dir), state_rows(target_dir)
    assert {t for t in source if source[t] != replayed[t]} == set()
    assert state_hash(settings.data_dir) == state_hash(target_dir)
    return target_dir
