"""An order across the two host topics: a control event that changes what derivation sees (an erasure, a
retention or compaction pass, a rollback, a review decision, a trust sweep) carries the end offset the turns
topic had in its partition when it was published (``TURNS_END_HEADER``). The turns before that offset come
before it, the others after it: a runtime captures only the turns before it until the event is applied, and
applies it once those are derived, as a replay does (it derives everything published before a control event
first). Offsets of one topic say nothing about the other, and times in milliseconds do not order two records
published in the same one."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from altm.bus._base import Bus, OutgoingRecord, Record, TopicPartition
from altm.core import ControlAction, Topic, partition_for, topic_name

TURNS_END_HEADER = "altm-turns-end"
"""Header of a control event that orders derivation: the turns topic's end offset in its partition when it was
published (see the module docstring)."""

ORDERING_ACTIONS = frozenset({ControlAction.ERASE, ControlAction.LIFECYCLE, ControlAction.ROLLBACK,
                              ControlAction.REVIEW_DECISION, ControlAction.SWEEP})
"""Control actions that change what derivation sees; pins, feedback and cycles do not wait for it (a use signal
counts the same whenever it is applied)."""


def turns_end(record: Record | OutgoingRecord) -> int | None:
    """The turns offset before which ``record`` (a control event) comes, or None (it orders nothing)."""
    for name, value in record.headers:
        if name == TURNS_END_HEADER and value.isdigit():
            return int(value)
    return None


def with_turns_end(record: OutgoingRecord, end: int) -> OutgoingRecord:
    """``record`` carrying ``end`` as its turns end (any it carried before replaced)."""
    headers = (*(h for h in record.headers if h[0] != TURNS_END_HEADER), (TURNS_END_HEADER, str(end).encode()))
    return OutgoingRecord(record.topic, record.value, key=record.key, partition=record.partition, headers=headers)


def awaiting_turns_end(record: OutgoingRecord) -> OutgoingRecord:
    """``record``, carrying an empty turns end when it is a control event that orders derivation: a sender that
    learns the turns topic's end only when it delivers the record (the host SDK's outbox) sets it then
    (``needs_turns_end``, ``with_turns_end``)."""
    if not _ordering(record):
        return record
    headers = (*(h for h in record.headers if h[0] != TURNS_END_HEADER), (TURNS_END_HEADER, b""))
    return OutgoingRecord(record.topic, record.value, key=record.key, partition=record.partition, headers=headers)


def needs_turns_end(record: OutgoingRecord) -> bool:
    """Whether ``record`` waits for its turns end (``awaiting_turns_end``)."""
    return any(name == TURNS_END_HEADER and not value for name, value in record.headers)


def _ordering(record: OutgoingRecord) -> bool:
    """Whether ``record`` is a control event whose action is one of ``ORDERING_ACTIONS``."""
    try:
        obj = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        return False
    return (isinstance(obj, dict) and obj.get("event_type") == "control"
            and obj.get("action") in {a.value for a in ORDERING_ACTIONS})


async def marked(bus: Bus, prefix: str, records: Sequence[OutgoingRecord]) -> list[OutgoingRecord]:
    """``records`` (host records, about to be published in this order), each control event that orders
    derivation carrying its turns end: the turns topic's end offset in its partition now, plus the turns of
    that partition before it in ``records``."""
    control, turns = topic_name(Topic.CONTROL, prefix), topic_name(Topic.TURNS, prefix)
    if not any(r.topic == control for r in records):
        return list(records)
    n = await bus.partitions(turns)

    def partition(rec: OutgoingRecord) -> int:
        return rec.partition if rec.partition is not None else partition_for(rec.key, n) if rec.key is not None else 0

    wanted = sorted({partition(r) for r in records if r.topic == control and _ordering(r)})
    if not wanted:
        return list(records)
    ends = await bus.end_offsets([TopicPartition(turns, p) for p in wanted])
    ahead = {p: ends[TopicPartition(turns, p)] for p in wanted}
    out: list[OutgoingRecord] = []
    for rec in records:
        p = partition(rec)
        if rec.topic == turns and p in ahead:
            ahead[p] += 1
        elif rec.topic == control and p in ahead and _ordering(rec):
            rec = with_turns_end(rec, ahead[p])
        out.append(rec)
    return out


async def publish_marked(bus: Bus, prefix: str, records: Sequence[OutgoingRecord]) -> None:
    """``records`` (host records) published with their turns ends (``marked``), each control event that orders
    derivation acknowledged before anything after it is sent: a turn sent after it is never on the log first
    (on Kafka, records of two topics are not ordered otherwise)."""
    out = await marked(bus, prefix, records)
    start = 0
    for i, rec in enumerate(out):
        if turns_end(rec) is not None:
            await bus.publish_many(out[start:i + 1])
            start = i + 1
    if start < len(out):
        await bus.publish_many(out[start:])
