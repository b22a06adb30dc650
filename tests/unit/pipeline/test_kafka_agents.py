"""The Kafka runtime's agents (issue 13): the deriving stages of the changes topic share one agent, every other
stage has its own, and a group never leaves a stage running on a batch it has given up (found by the review of
the change that grouped them: one stage's cancellation left its sibling running, detached, while faust
acknowledged the batch). No broker: faust's stream is a stand-in that acknowledges as faust's does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from altm.bus import Record
from altm.core import Settings, Topic
from altm.pipeline import ProcessorContext
from altm.pipeline._drivers import StageDriver
from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.kafka import FaustRuntime, agent_groups
from altm.store import DeferredWork, ShardSet


def test_the_deriving_stages_of_the_changes_topic_share_an_agent(settings: Settings) -> None:
    """... and embed has one of its own, or none when it has no embedder (it would skip every change)."""
    shards = ShardSet(settings.data_dir, settings.partitions)

    async def publish(records: Sequence[Any]) -> None:
        return None

    def groups(embedder: bool) -> list[list[str]]:
        processors = default_processors(*((None, object(), object()) if embedder else ()))
        stages = [StageDriver(p, ProcessorContext(settings=settings), DeferredWork(shards, settings), publish)
                  for p in processors]
        return [[s.name for s in group] for group in agent_groups(stages)]

    assert groups(True)[0] == ["fold", "extract", "link", "verify", "govern"]
    assert sorted(groups(True)[1:]) == [["capture"], ["control"], ["embed"], ["lifecycle"], ["sweep"]]
    assert sorted(groups(False)[1:]) == [["capture"], ["control"], ["lifecycle"], ["sweep"]]
    shards.close()


class _Stage:
    def __init__(self, name: str, seconds: float, fail: bool, log: list[str]) -> None:
        self.name, self.seconds, self.fail, self.log = name, seconds, fail, log

    def wants(self, record: Record) -> bool:
        return True

    async def handle(self, records: Sequence[Record]) -> int:
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.log.append(f"{self.name} cancelled")
            raise
        if self.fail:
            raise asyncio.CancelledError  # e.g. a producer future cancelled under it: not an Exception
        self.log.append(f"{self.name} finished")
        return len(records)


class _Stream:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def _events(self) -> AsyncIterator[list[Any]]:
        message = SimpleNamespace(topic="altm.changes", partition=0, offset=5, key=b"k", value=b"v", headers=(),
                                  timestamp=1.0)
        try:
            yield [SimpleNamespace(message=message)]
        finally:  # as faust's take_events: the batch is acknowledged whenever the generator is closed
            self.log.append("batch acknowledged")

    def take_events(self, n: int, within: float) -> AsyncIterator[list[Any]]:
        return self._events()


async def test_a_stage_that_gives_up_takes_its_group_with_it(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "d", partitions=4, broker="kafka://127.0.0.1:1", embedder="none")
    runtime = FaustRuntime(s, ShardSet(s.data_dir, s.partitions), ProcessorContext(settings=s), [], "id")

    async def restored(partitions: Sequence[int]) -> None:
        return None

    runtime._restored_all = restored  # type: ignore[method-assign]
    log: list[str] = []
    stages = [_Stage("a", 0.01, True, log), _Stage("b", 0.3, False, log)]
    runtime._add_agent(runtime.app, Topic.CHANGES, "altm-group", stages)  # type: ignore[arg-type]
    try:
        async for _ in runtime.app.agents["altm-group"].fun(_Stream(log)):
            pass
    except asyncio.CancelledError:
        log.append("agent stopped")
    await asyncio.sleep(0.5)
    assert "b finished" not in log  # not left running after the agent stopped
    assert log.index("b cancelled") < log.index("agent stopped")
    assert runtime._handled["b"] == {}  # nothing counted as handled
