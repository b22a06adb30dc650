"""The writer: the only code that mutates memory state (DESIGN §1.2, "one door for writes").

For each proposal record it, in one shard transaction: validates (scope vs. partition key, size, evidence,
content hash, L0 append-only), writes the audit row before the mutation, applies it idempotently, stores
the consumer offset, and enqueues the resulting ``changes`` event (and any dead letter) in the outbox.
The runtime then publishes the outbox, so a crash between commit and publish loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..config import Settings
from ..schemas import (
    ChangeEvent,
    ChangeStatus,
    DeadLetter,
    DecodeError,
    Layer,
    MemoryUnit,
    ProposalEvent,
    content_hash,
    decode_event,
    derive_id,
    encode,
)
from ..services.store import Shard, ShardSet, comparable, memory_to_row, row_to_memory
from .bus import Record
from .partitioner import partition_for
from .topics import Topic, topic_name

WRITER_GROUP = "altm-writer"
_PAYLOAD_KEEP = 64 * 1024


def _now() -> str:
    return datetime.now(UTC).isoformat()


def original_text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


@dataclass
class WriteOutcome:
    skipped: bool = False
    changes: list[ChangeEvent] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


class Writer:
    def __init__(self, shards: ShardSet, settings: Settings) -> None:
        self.shards = shards
        self.settings = settings
        self.changes_topic = topic_name(Topic.CHANGES, settings.topic_prefix)
        self.dlq_topic = topic_name(Topic.DLQ, settings.topic_prefix)

    def resume_offset(self, topic: str, partition: int) -> int | None:
        """The next proposal offset to apply, as stored with the data (the source of truth on restart)."""
        return self.shards.get(partition).next_offset(WRITER_GROUP, topic, partition)

    def apply(self, record: Record, partitions: int) -> WriteOutcome:
        shard = self.shards.get(record.partition)
        stored = shard.next_offset(WRITER_GROUP, record.topic, record.partition)
        if stored is not None and record.offset < stored:
            return WriteOutcome(skipped=True)  # already applied: at-least-once delivery, idempotent effect
        now = _now()
        with shard.transaction():
            outcome = self._apply(shard, record, partitions, now)
            shard.store_offset(WRITER_GROUP, record.topic, record.partition, record.offset + 1)
            for change in outcome.changes:
                shard.enqueue(self.changes_topic, change.key, encode(change))
            for dead in outcome.dead_letters:
                shard.enqueue(self.dlq_topic, record.key, encode(dead))
        return outcome

    # -------------------------------------------------------------------------------------------------
    def _apply(self, shard: Shard, record: Record, partitions: int, now: str) -> WriteOutcome:
        source = (record.topic, record.partition, record.offset)
        try:
            event = decode_event(record.value)
        except DecodeError as exc:
            return self._malformed(shard, record, str(exc), now)
        if not isinstance(event, ProposalEvent):
            return self._malformed(
                shard, record, f"the proposals topic carries proposals, got a {event.event_type} event", now
            )
        reason = self._validate(shard, event, record, partitions)
        if reason is not None:
            shard.add_rejection(
                at=now, proposal_id=event.event_id,
                memory_id=event.memory.memory_id if event.memory else None, reason=reason, source=source,
                payload=original_text(record.value[:_PAYLOAD_KEEP]),
            )
            return WriteOutcome(changes=[self._change(event, record, ChangeStatus.REJECTED, reason=reason)])
        return self._upsert(shard, event, record, now)

    def _malformed(self, shard: Shard, record: Record, reason: str, now: str) -> WriteOutcome:
        shard.add_rejection(
            at=now, proposal_id=None, memory_id=None, reason=f"malformed proposal: {reason}",
            source=(record.topic, record.partition, record.offset),
            payload=original_text(record.value[:_PAYLOAD_KEEP]),
        )
        dead = DeadLetter(
            stage="writer", error=f"malformed proposal: {reason}", original=original_text(record.value),
            source_topic=record.topic, source_partition=record.partition, source_offset=record.offset,
            timestamp=datetime.now(UTC),
        )
        return WriteOutcome(dead_letters=[dead])

    def _validate(self, shard: Shard, event: ProposalEvent, record: Record, partitions: int) -> str | None:
        home = event.scope.home
        if record.key != home:
            return (
                f"scope home {home!r} does not match the record key {record.key!r}: a proposal must be "
                "keyed by its own scope home"
            )
        expected = partition_for(home, partitions)
        if expected != record.partition:
            return (
                f"scope home {home!r} belongs to partition {expected}, but the proposal arrived on "
                f"partition {record.partition}"
            )
        mem = event.memory
        if mem is None:
            return "proposal has no memory"
        if mem.scope.home != home:
            return f"memory scope home {mem.scope.home!r} differs from the proposal's scope home {home!r}"
        size = len(mem.content.encode("utf-8"))
        if size > self.settings.max_content_bytes:
            return (
                f"content is {size} bytes, over the limit of {self.settings.max_content_bytes} "
                "(ALTM_MAX_CONTENT_BYTES)"
            )
        if mem.content_hash != content_hash(mem.content):
            return "content_hash does not match the content"
        if mem.layer is Layer.L0 and mem.evidence:
            return "an L0 message is raw input and cannot cite evidence"
        if mem.layer is not Layer.L0 and not mem.evidence:
            return f"a derived {mem.layer.value} memory needs evidence reaching L0"
        for ev in mem.evidence:
            if shard.memory_row(ev) is None:
                return f"evidence {ev} is not in this shard (derived memories cite stored memories)"
        return None

    def _upsert(self, shard: Shard, event: ProposalEvent, record: Record, now: str) -> WriteOutcome:
        mem = event.memory
        assert mem is not None
        new_row = memory_to_row(mem, datetime.fromisoformat(now))
        old_row = shard.memory_row(mem.memory_id)
        if old_row is None:
            shard.insert_memory(new_row, at=now, proposal_id=event.event_id, actor=event.processor)
        elif comparable(old_row) == comparable(new_row):
            return WriteOutcome(changes=[self._change(event, record, ChangeStatus.UNCHANGED)])
        elif mem.layer is Layer.L0:
            reason = (
                f"L0 is append-only: {mem.memory_id} (source {mem.source_id!r}) is already stored with "
                "different content"
            )
            shard.add_rejection(
                at=now, proposal_id=event.event_id, memory_id=mem.memory_id, reason=reason,
                source=(record.topic, record.partition, record.offset),
                payload=original_text(record.value[:_PAYLOAD_KEEP]),
            )
            return WriteOutcome(changes=[self._change(event, record, ChangeStatus.REJECTED, reason=reason)])
        else:
            shard.update_memory(old_row, new_row, at=now, proposal_id=event.event_id, actor=event.processor)
        after = row_to_memory(new_row)
        return WriteOutcome(changes=[self._change(event, record, ChangeStatus.COMMITTED, memory=after)])

    @staticmethod
    def _change(
        event: ProposalEvent, record: Record, status: ChangeStatus, *, reason: str | None = None,
        memory: MemoryUnit | None = None,
    ) -> ChangeEvent:
        mem = event.memory
        return ChangeEvent(
            event_id=derive_id("chg", event.event_id, status.value),
            scope=event.scope,
            timestamp=event.timestamp,
            proposal_id=event.event_id,
            op=event.op,
            status=status,
            memory_id=mem.memory_id if mem else None,
            layer=mem.layer if mem else None,
            kind=mem.kind if mem else None,
            reason=reason,
            memory=memory,
            source_topic=record.topic,
            source_partition=record.partition,
            source_offset=record.offset,
        )
