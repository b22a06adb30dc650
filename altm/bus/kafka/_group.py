"""A co-partitioned group member: one consumer of several topics whose partition p of every topic goes to the
same member, with explicit commits, pause/resume and awaited rebalance callbacks (a Kafka worker's input)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTP
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.errors import KafkaError

from altm.bus._base import BusError, Record, TopicPartition
from altm.bus.kafka._bus import GROUP_OPTIONS, _record


class Rebalance(Protocol):
    """What a member does when the group moves partitions. Both are awaited inside the rebalance: when
    ``revoked`` returns, nothing of those partitions is being handled and what was handled is committed."""

    async def revoked(self, tps: frozenset[TopicPartition]) -> None: ...

    async def assigned(self, tps: frozenset[TopicPartition]) -> None: ...


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, rebalance: Rebalance) -> None:
        self.rebalance = rebalance

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.rebalance.revoked(frozenset(TopicPartition(tp.topic, tp.partition) for tp in revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.rebalance.assigned(frozenset(TopicPartition(tp.topic, tp.partition) for tp in assigned))


class GroupMember:
    """Topics with one partition count, consumed in ``group_id`` with the range assignor: every member that
    subscribes to the same topics gets the same partition numbers of each (all about one user on one member).
    Offsets are committed explicitly, never automatically; positions start at the group's committed offsets
    (the log's start for a new group)."""

    def __init__(self, bootstrap: str, group_id: str, topics: Sequence[str], rebalance: Rebalance, *,
                 client_id: str = "altm-worker", session_timeout_s: float = 60.0, rebalance_timeout_s: float = 120.0,
                 max_poll_interval_s: float = 300.0, max_records: int = 2048) -> None:
        self.topics = list(topics)
        self.max_records = max_records
        self._consumer = AIOKafkaConsumer(
            *topics,
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id=client_id,
            **GROUP_OPTIONS,
            partition_assignment_strategy=(RangePartitionAssignor,),
            session_timeout_ms=int(session_timeout_s * 1000),
            heartbeat_interval_ms=int(session_timeout_s * 100),
            rebalance_timeout_ms=int(rebalance_timeout_s * 1000),
            max_poll_interval_ms=int(max_poll_interval_s * 1000),
            max_poll_records=max_records,
            fetch_max_wait_ms=100,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        self._consumer.subscribe(topics=list(topics), listener=_Listener(rebalance))

    async def start(self) -> None:
        try:
            await self._consumer.start()
        except BaseException as exc:
            await self._consumer.stop()  # its client and tasks, started before the failure
            if isinstance(exc, KafkaError):
                raise BusError(f"cannot join the consumer group: {exc}") from exc
            raise

    async def stop(self) -> None:
        """Leave the group (its partitions go to the other members at once)."""
        await self._consumer.stop()

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(TopicPartition(tp.topic, tp.partition) for tp in self._consumer.assignment())

    async def fetch(self, timeout_s: float) -> dict[TopicPartition, list[Record]]:
        """Records after the current positions of the partitions not paused, per partition, in offset order."""
        try:
            batches = await self._consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=self.max_records)
        except KafkaError as exc:
            raise BusError(f"fetching failed: {exc}") from exc
        return {TopicPartition(tp.topic, tp.partition): [_record(m) for m in msgs] for tp, msgs in batches.items()
                if msgs}

    def pause(self, tps: Sequence[TopicPartition]) -> None:
        self._consumer.pause(*(KafkaTP(tp.topic, tp.partition) for tp in tps))

    def resume(self, tps: Sequence[TopicPartition]) -> None:
        self._consumer.resume(*(KafkaTP(tp.topic, tp.partition) for tp in tps))

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the *next* offset to read of each partition still assigned (the others are not ours to
        commit any more: their new owner reads them again from what was committed before)."""
        assigned = self.assignment()
        mine = {KafkaTP(tp.topic, tp.partition): off for tp, off in offsets.items() if tp in assigned}
        if mine:
            try:
                await self._consumer.commit(mine)
            except KafkaError as exc:  # a rebalance under way, the coordinator away: those records come again
                raise BusError(f"committing offsets failed: {exc}") from exc

    async def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset of ``tp`` (None when it never committed one)."""
        try:
            off = await self._consumer.committed(KafkaTP(tp.topic, tp.partition))
        except KafkaError as exc:
            raise BusError(f"reading the committed offset of {tp.topic}[{tp.partition}] failed: {exc}") from exc
        return None if off is None or off < 0 else int(off)

    async def committed_many(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offsets of ``tps`` in one request to its coordinator (None where it never
        committed one). ``AIOKafkaConsumer.committed`` asks for one partition at a time; this is the request
        it makes, for all of them."""
        if not tps:
            return {}
        try:
            found = await self._consumer._coordinator.fetch_committed_offsets(
                [KafkaTP(tp.topic, tp.partition) for tp in tps])
        except KafkaError as exc:
            raise BusError(f"reading the committed offsets of {len(tps)} partitions failed: {exc}") from exc
        offsets = {TopicPartition(k.topic, k.partition): int(v.offset) for k, v in found.items()}
        return {tp: off if (off := offsets.get(tp, -1)) >= 0 else None for tp in tps}

    def positions(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset of the next record ``fetch`` returns of each of ``tps`` that is assigned and has a position
        (it moves when ``fetch`` returns records; never waits)."""
        subscription = self._consumer._subscription.subscription
        assignment = subscription.assignment if subscription is not None else None
        if assignment is None:
            return {}
        out: dict[TopicPartition, int] = {}
        for tp in tps:
            ktp = KafkaTP(tp.topic, tp.partition)
            if ktp in assignment.tps:
                state = assignment.state_value(ktp)
                if state.has_valid_position:
                    out[tp] = int(state.position)
        return out

    async def end_offsets(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        try:
            ends = await self._consumer.end_offsets([KafkaTP(tp.topic, tp.partition) for tp in tps])
        except KafkaError as exc:
            raise BusError(f"reading end offsets failed: {exc}") from exc
        return {TopicPartition(k.topic, k.partition): int(v) for k, v in ends.items()}
