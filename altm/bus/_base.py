"""The bus port: keyed publish with headers, consumer groups with explicit commit and seek."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from altm.core import TopicSpec

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes
    headers: Headers = ()
    timestamp_ms: int = 0

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class OutgoingRecord:
    topic: str
    value: bytes
    key: str | None = None
    headers: Headers = ()
    partition: int | None = field(default=None)  # None: the key decides (murmur2)


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int


class BusError(RuntimeError):
    """A bus operation failed (unknown topic, broker unreachable, closed bus...)."""


class Consumer(ABC):
    """A member of a consumer group. Offsets are committed explicitly, never automatically."""

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    def assignment(self) -> frozenset[TopicPartition]: ...

    @abstractmethod
    async def poll(self, max_records: int = 500, timeout_s: float = 0.0) -> list[Record]:
        """Records after the current positions; waits up to ``timeout_s`` when there are none."""

    @abstractmethod
    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the *next* offset to read for each partition."""

    @abstractmethod
    async def committed(self, tp: TopicPartition) -> int | None: ...

    @abstractmethod
    async def seek(self, tp: TopicPartition, offset: int) -> None:
        """Move the position (e.g. replay from 0, or resume from an offset stored with the data)."""

    @abstractmethod
    async def lags(self) -> dict[TopicPartition, int]:
        """Records after the current position, per assigned partition."""

    async def lag(self) -> int:
        """Records after the current positions, over every assigned partition."""
        return sum((await self.lags()).values())


class Bus(ABC):
    """Publish/subscribe over partitioned topics. Implementations: embedded SQLite log, Apache Kafka."""

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def ensure_topics(self, specs: Sequence[TopicSpec]) -> None: ...

    @abstractmethod
    async def partitions(self, topic: str) -> int: ...

    @abstractmethod
    async def publish_many(self, records: Sequence[OutgoingRecord]) -> list[RecordMetadata]:
        """Publish in order; keyed records land on ``partition_for(key)``."""

    async def publish(
        self, topic: str, value: bytes, key: str | None = None, headers: Headers = ()
    ) -> RecordMetadata:
        (meta,) = await self.publish_many([OutgoingRecord(topic, value, key, headers)])
        return meta

    @abstractmethod
    def consumer(self, group_id: str, topics: Sequence[str], *, opens: RecordFilter | None = None) -> Consumer:
        """A consumer of ``topics`` in ``group_id``. ``opens``: the records a sealing bus opens for it (the
        others it delivers sealed, for a reader that skips them on their headers); other buses ignore it."""

    @abstractmethod
    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    @abstractmethod
    async def read_all(self, topics: Sequence[str], *, from_offset: int = 0,
                       from_time_ms: int | None = None) -> list[Record]:
        """Every record of ``topics`` from ``from_offset`` (or from the first at or after ``from_time_ms``)
        up to the ends the topics have now, outside any consumer group (replay reads the log this way)."""

    async def wait_for_data(self, timeout_s: float) -> None:
        """Return when new records may be there, or after ``timeout_s`` (an idle loop's pause)."""
        await asyncio.sleep(timeout_s)

    async def expire(self) -> int:
        """Delete the records past their topic's retention (``TopicSpec.retention_ms``); returns how many. A
        broker does it itself (Kafka's ``retention.ms``): nothing here."""
        return 0

    @abstractmethod
    async def identity(self) -> str:
        """A stable id of this log. Offsets stored against another log mean nothing here, so a shard
        records the identity its offsets belong to and refuses records of any other."""


RecordFilter = Callable[[Record], bool]
"""Decides on a record's key and headers alone (its value may be sealed)."""
