"""Streams: the bus and its adapters, pure processors, the writer and the two runtimes.

The writer lives in :mod:`altm.streams.writer` and the runtimes in :mod:`altm.streams.runtime`; this
package root only re-exports the dependency-free pieces (partitioner, topics) so stores can use them.
"""

from .partitioner import murmur2, partition_for
from .topics import Topic, TopicSpec, all_topic_specs, topic_name

__all__ = ["Topic", "TopicSpec", "all_topic_specs", "murmur2", "partition_for", "topic_name"]
