"""verify proposes a member's verdict only where it differs from the last one this process proposed or from the
stored one (``Proposed``): a group it has not judged since it started, or since a rebalance took partitions from
it (another worker judged them meanwhile, and what it proposed may still be on its way to the writer when they
come back), has every member's verdict proposed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from altm.core import Settings
from altm.pipeline import ProcessorContext, default_processors
from altm.pipeline._drivers import StageDriver
from altm.pipeline.processors.verify import VerifyProcessor
from altm.pipeline.runtime.kafka._lane import Lane
from altm.store import DeferredWork, ShardSet
from tests.support.memories import embedded, runtime_of
from tests.support.turns import make_turn

LINE = "The deadline is March {d}, budget {i} dollars."


async def _verdicts_of_last(settings: Settings, *, rebalanced: bool) -> int:
    """The set_trust proposals the fourth saying of a subject made."""
    s = settings.model_copy(update={"embedder": "none", "seal_log": False})
    processors = default_processors()
    (verify,) = [p for p in processors if isinstance(p, VerifyProcessor)]
    async with embedded(s, processors=processors) as deployment:
        rt = runtime_of(deployment)
        for i in range(3):
            await rt.publish([make_turn(i, LINE.format(i=i, d=1 + i), session=f"s{i}")])
            await rt.run_until_idle()
        before = len(await rt.log.read_all(["altm.proposals"]))
        if rebalanced:
            verify.forget_partitions([0])
        await rt.publish([make_turn(3, LINE.format(i=3, d=4), session="s3")])
        await rt.run_until_idle()
        after = await rt.log.read_all(["altm.proposals"])
    return sum(1 for r in after[before:] if orjson.loads(r.value).get("op") == "set_trust")


async def test_a_new_atom_proposes_only_the_verdicts_it_changes(settings: Settings) -> None:
    assert await _verdicts_of_last(settings, rebalanced=False) == 2  # its own, and the one it now contradicts


async def test_after_a_rebalance_every_members_verdict_is_proposed_again(settings: Settings) -> None:
    assert await _verdicts_of_last(settings, rebalanced=True) == 4


def test_a_lane_that_gives_partitions_up_tells_its_processors(settings: Settings, tmp_path: Path) -> None:
    told: list[list[int]] = []

    class Remembering(VerifyProcessor):
        def forget_partitions(self, partitions: Sequence[int]) -> None:
            told.append(list(partitions))

    shards = ShardSet(tmp_path / "d", 1)
    driver = StageDriver(Remembering(), ProcessorContext(settings), DeferredWork(shards, settings), publish=_unused)
    lane = Lane("altm.changes", [driver], batch=10, opener=_unused, ready=lambda _p: True)
    lane.forget([1, 3])  # what a revocation calls (KafkaRuntime.revoked)
    assert told == [[1, 3]]
    shards.close()


def _unused(*_args: object) -> Any:
    raise AssertionError("not called")
