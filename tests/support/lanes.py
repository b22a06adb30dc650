"""Stand-ins for the Kafka worker's unit tests: records of one partition, a polling wait, the group member."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from altm.bus import Record, TopicPartition


def records(partition: int, offsets: range, topic: str = "altm.changes",
            headers: tuple[tuple[str, bytes], ...] = ()) -> list[Record]:
    return [Record(topic, partition, o, "t/w/u", b"v", headers=headers) for o in offsets]


async def until(condition: Callable[[], object], timeout_s: float = 5.0) -> None:
    for _ in range(int(timeout_s * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


class Member:
    """The group member's surface the runtime uses: the assignment, commits (kept), committed offsets and the
    log's end offsets (``end``: the committed offset unless given, as when the group has handled everything)."""

    def __init__(self, assigned: set[TopicPartition], committed: int | None = 10, end: int | None = None) -> None:
        self.assigned = assigned
        self.commits: list[dict[TopicPartition, int]] = []
        self._committed = committed
        self._end = end if end is not None else (committed or 0)
        self.asked: list[list[TopicPartition]] = []  # the partitions of each committed_many request
        self.stopped = False

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self.assigned)

    async def committed(self, tp: TopicPartition) -> int | None:
        self.asked.append([tp])
        return self._committed

    async def committed_many(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        self.asked.append(sorted(tps))
        return dict.fromkeys(tps, self._committed)

    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, self._end)

    def positions(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}  # nothing fetched: the runtime's own ``_next`` says how far it queued

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.commits.append({tp: o for tp, o in offsets.items() if tp in self.assigned})

    def pause(self, tps: Sequence[TopicPartition]) -> None:
        return None

    def resume(self, tps: Sequence[TopicPartition]) -> None:
        return None

    async def stop(self) -> None:
        self.stopped = True
