"""A bus that seals what it publishes and opens what it delivers: the stores above it see plain events, the
log (embedded file or Kafka segments) holds only ciphertext under destroyable keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from altm.bus._base import Bus, Consumer, OutgoingRecord, Record, RecordFilter, RecordMetadata, TopicPartition
from altm.bus.sealing._sealer import Sealer, is_shredded
from altm.core.topics import TopicSpec


class SealedConsumer(Consumer):
    def __init__(self, inner: Consumer, sealer: Sealer, opens: RecordFilter | None = None) -> None:
        self.inner = inner
        self.sealer = sealer
        self.opens = opens

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    def assignment(self) -> frozenset[TopicPartition]:
        return self.inner.assignment()

    async def poll(self, max_records: int = 500, timeout_s: float = 0.0) -> list[Record]:
        """Opened records (those ``opens`` accepts; the others as they are); a shredded one comes as an empty
        record the stages skip (its offset still counts)."""
        return [self.sealer.open(r) if self.opens is None or self.opens(r) else r
                for r in await self.inner.poll(max_records, timeout_s)]

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        await self.inner.commit(offsets)

    async def committed(self, tp: TopicPartition) -> int | None:
        return await self.inner.committed(tp)

    async def seek(self, tp: TopicPartition, offset: int) -> None:
        await self.inner.seek(tp, offset)

    async def lags(self) -> dict[TopicPartition, int]:
        return await self.inner.lags()


class SealedBus(Bus):
    """``inner`` with sealing; ``inner`` stays reachable for adapter-specific operations (group lag...)."""

    def __init__(self, inner: Bus, sealer: Sealer) -> None:
        self.inner = inner
        self.sealer = sealer

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        try:
            await self.inner.stop()
        finally:
            self.sealer.keys.close()

    async def ensure_topics(self, specs: Sequence[TopicSpec]) -> None:
        await self.inner.ensure_topics(specs)

    async def partitions(self, topic: str) -> int:
        return await self.inner.partitions(topic)

    async def publish_many(self, records: Sequence[OutgoingRecord]) -> list[RecordMetadata]:
        return await self.inner.publish_many([self.sealer.seal(r) for r in records])

    def consumer(self, group_id: str, topics: Sequence[str], *, opens: RecordFilter | None = None) -> Consumer:
        return SealedConsumer(self.inner.consumer(group_id, topics), self.sealer, opens)

    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return await self.inner.end_offsets(tps)

    async def read_all(self, topics: Sequence[str], *, from_offset: int = 0, from_time_ms: int | None = None,
                       keep_shredded: bool = False) -> list[Record]:
        """Opened records; shredded ones are left out (they are gone for every reader), or, ``keep_shredded``,
        kept empty with their headers (a replay needs to know where a control event it cannot apply was, and
        which it was)."""
        records = await self.inner.read_all(topics, from_offset=from_offset, from_time_ms=from_time_ms)
        opened = (self.sealer.open(r) for r in records)
        return [r for r in opened if keep_shredded or not is_shredded(r)]

    async def identity(self) -> str:
        return await self.inner.identity()

    async def wait_for_data(self, timeout_s: float) -> None:
        await self.inner.wait_for_data(timeout_s)

    async def expire(self) -> int:
        return await self.inner.expire()
