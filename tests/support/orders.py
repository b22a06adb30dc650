"""The same input in another order of arrival: data dirs that start alike, then take events one at a time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from altm.core import ControlEvent, Settings, TurnEvent
from tests.support.memories import store_with

Arrival = tuple[str, Sequence[TurnEvent | ControlEvent]]
"""A name (the data dir's) and the events in the order they arrive."""


async def in_each_order(settings: Settings, base: Path, start: Sequence[TurnEvent],
                        orders: Sequence[Arrival]) -> list[Path]:
    """One data dir per order under ``base``: ``start`` derived, then each event of the order derived before
    the next comes. Returns the data dirs, in the order of ``orders``."""
    dirs = []
    for name, order in orders:
        s = settings.model_copy(update={"data_dir": base / name})
        async with store_with(s, start) as (rt, _):
            for event in order:
                await rt.publish([event])
                await rt.run_until_idle()
        dirs.append(s.data_dir)
    return dirs
