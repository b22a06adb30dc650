"""Topic names and specs. Every topic has the same partition count and is keyed by the scope home."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Topic(StrEnum):
    TURNS = "turns"
    CONTROL = "control"
    PROPOSALS = "proposals"
    CHANGES = "changes"
    DLQ = "dlq"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    retention_ms: int | None = None  # None: keep forever (the log is the source of truth)


def topic_name(topic: Topic, prefix: str = "") -> str:
    return f"{prefix}{topic.value}"


def under_prefix(stored: str, prefix: str) -> str:
    """The topic a stored topic name (or kind) stands for under ``prefix``: its kind is its last part, so a record
    kept with the full name it had (an outbox row, deferred work) goes where this deployment's workers read
    after ``ALTM_TOPIC_PREFIX`` changed; a name of no kind is kept as it is."""
    for kind in Topic:
        if stored.endswith(kind.value):
            return topic_name(kind, prefix)
    return stored


def all_topic_specs(partitions: int, prefix: str = "", dlq_retention_ms: int | None = None) -> list[TopicSpec]:
    return [
        TopicSpec(topic_name(t, prefix), partitions, dlq_retention_ms if t is Topic.DLQ else None)
        for t in Topic
    ]
