"""The Kafka runtime (``altm worker``): lanes over one co-partitioned consumer group; see :mod:`._runtime`."""

from altm.pipeline.runtime._claim import DataDirClaim, DataDirTaken
from altm.pipeline.runtime.kafka._lane import Lane, handle_together, lanes_of
from altm.pipeline.runtime.kafka._runtime import RESTORE_CHUNK, KafkaRuntime, worker_claim

__all__ = ["RESTORE_CHUNK", "DataDirClaim", "DataDirTaken", "KafkaRuntime", "Lane", "handle_together", "lanes_of",
           "worker_claim"]
