"""Streams: the bus and its adapters, pure processors, the writer and the two runtimes."""

from .partitioner import murmur2, partition_for
from .topics import Topic, TopicSpec, all_topic_specs, topic_name
from .writer import WRITER_GROUP, WriteOutcome, Writer

__all__ = [
    "WRITER_GROUP",
    "Topic",
    "TopicSpec",
    "WriteOutcome",
    "Writer",
    "all_topic_specs",
    "murmur2",
    "partition_for",
    "topic_name",
]
