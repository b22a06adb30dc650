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


def all_topic_specs(partitions: int, prefix: str = "", dlq_retention_ms: int | None = None) -> list[TopicSpec]:
    return [
        TopicSpec(topic_name(t, prefix), partitions, dlq_retention_ms if t is Topic.DLQ else None)
        for t in Topic
    ]
