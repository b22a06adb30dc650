"""Runtimes: the embedded runtime (default), the Kafka worker runtime (``altm.pipeline.runtime.kafka``) and a
Kafka deployment's read replica (``altm.pipeline.runtime.replica``)."""

from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.embedded import EmbeddedRuntime
from altm.pipeline.runtime.replica import ReplicaRuntime

__all__ = ["EmbeddedRuntime", "ReplicaRuntime", "default_processors"]
