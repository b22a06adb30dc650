"""The randomized replay check: a seed's random history (turns of three sessions and two agents, cycles with
citations, feedback, forgets, compaction, rollbacks, review decisions, erasures) is replayed from the log into
a fresh data dir, and every state table and the state hash must equal the source's. Most of the erasure and
replay findings in this folder were found by it. CI runs a fixed set of seeds; ``ALTM_REPLAY_SEEDS=0-199``
runs a range, and ``ALTM_REPLAY_OVERLAP=1`` sends some operations while the one before is still on its way
(the README's erasure section keeps the counts of seeds that differ)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from altm.core import Settings
from tests.support.memories import store_with
from tests.support.replay import replayed_equal
from tests.support.scenarios import first_turns, play


def _seeds() -> list[int]:
    spec = os.environ.get("ALTM_REPLAY_SEEDS", "0-11")
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.mark.parametrize("seed", _seeds())
async def test_a_random_history_replays_to_the_same_state(settings: Settings, tmp_path: Path, seed: int) -> None:
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": seed % 2 == 1})
    async with store_with(s, first_turns(seed)) as (rt, app):
        history = await play(seed, rt, app, s.data_dir, overlap=os.environ.get("ALTM_REPLAY_OVERLAP") == "1")
    print("\n".join(history.steps))
    await replayed_equal(s, tmp_path / "replayed")


@pytest.mark.parametrize("seed", [219, 310, 336, 382, 439])
async def test_control_events_sent_while_turns_are_on_their_way_replay_to_the_same_state(
        settings: Settings, tmp_path: Path, seed: int) -> None:
    """Seeds of the overlap check that differed: an erasure, a retention or compaction pass or a rollback sent
    while the turns before it (or the consequences of the control event before it) were still being derived
    met some of what they derive and not the rest, where a replay derives everything published before a
    control event first. A control event that orders derivation now carries the turns offset it was sent at;
    the embedded runtime takes it up once the turns before it are derived and holds the turns after it back
    until it is (``altm.pipeline.runtime._order``)."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": seed % 2 == 1})
    async with store_with(s, first_turns(seed)) as (rt, app):
        await play(seed, rt, app, s.data_dir, overlap=True)
    await replayed_equal(s, tmp_path / "replayed")


@pytest.mark.parametrize("seed", [309])
async def test_what_an_agent_erasure_shredded_replays_to_the_same_state(
        settings: Settings, tmp_path: Path, seed: int) -> None:
    """Seed 309: retention forgot a coder message and its tombstone refused a reviewer's re-statement, a review
    dismissed a rejection of the coder's, and then the coder agent was erased, which destroyed the keys of the
    retention pass's control event and of what the rejection came from. The replay never applied that pass (its
    tombstone, carried pending, let the re-statement in) and never made that rejection (the decision was refused
    as naming none). Now the pass's tombstones name it by a ref its record carries in the clear, and the
    replay makes them refuse where it meets it shredded; an erasure remembers the review items it removed, and a
    decision that names one is void (``tests/negative/test_forget_tombstone_taken_over.py``)."""
    s = settings.model_copy(update={"embedder": "none", "retention_days_l0": 30.0, "retention_days_l2": 30.0,
                                    "retired_key_grace_s": 0.0, "retention_tombstones": seed % 2 == 1})
    async with store_with(s, first_turns(seed)) as (rt, app):
        await play(seed, rt, app, s.data_dir)
    await replayed_equal(s, tmp_path / "replayed")
