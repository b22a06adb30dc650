"""The derived state is a function of the input, not of how the stages interleave (issue 13: the same 20k turns
gave three state hashes in the embedded runtime, one worker and two workers). Here the interleaving changes with
the poll batch size and how often the deriving stages run, over turns whose names arrive in several spellings."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from altm.app.ingest import read_line
from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.interfaces.cli import sample_path
from altm.wiring import state_hash
from tests.support.memories import store_with
from tests.support.turns import make_turn

SPELLINGS = [
    make_turn(101, "Last week we moved the Billing Service to Postgres 16.", session="v1"),
    make_turn(102, "the billing service had two outages last week, both on Friday.", session="v2"),
    make_turn(103, "Can the BILLING SERVICE team own the Postgres upgrade? last week was rough.", session="v3"),
    make_turn(104, "We decided the billing service keeps Postgres; Last Week's outage was the disk.", session="v4"),
]


def _turns(settings: Settings) -> list[TurnEvent]:
    lines = sample_path().read_text().splitlines()
    sample = [e for e in (read_line(line, settings) for line in lines if line.strip()) if isinstance(e, TurnEvent)]
    assert len(sample) == len([line for line in lines if line.strip()])
    return [*sample, *SPELLINGS]


async def _hash(settings: Settings, data_dir: Path, poll_batch: int, derive_every: int) -> str:
    s = settings.model_copy(update={"data_dir": data_dir, "embedder": "none", "poll_batch": poll_batch,
                                    "derive_every_steps": derive_every})
    async with store_with(s, _turns(s)):
        pass
    return state_hash(data_dir)


@pytest.mark.parametrize(("poll_batch", "derive_every"), [(1, 1), (3, 7), (512, 1)])
async def test_the_state_does_not_depend_on_how_stages_interleave(settings: Settings, tmp_path: Path,
                                                                  poll_batch: int, derive_every: int) -> None:
    reference = await _hash(settings, tmp_path / "reference", 512, 8)
    assert await _hash(settings, tmp_path / "other", poll_batch, derive_every) == reference


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
async def test_the_state_does_not_depend_on_the_order_turns_arrive_in(settings: Settings, tmp_path: Path,
                                                                     seed: int) -> None:
    """The same turns published in another order (sessions interleaved, messages late): the same state. Every
    stored field is a function of the input set: a node's spelling, a scene's anchor and text, a message's
    context."""
    s = settings.model_copy(update={"embedder": "none"})
    turns = _turns(s)
    shuffled = list(turns)
    random.Random(seed).shuffle(shuffled)
    hashes = []
    for name, order in (("in-order", turns), ("shuffled", shuffled)):
        data_dir = tmp_path / name
        async with store_with(s.model_copy(update={"data_dir": data_dir}), order):
            pass
        hashes.append(state_hash(data_dir))
    assert hashes[0] == hashes[1]
