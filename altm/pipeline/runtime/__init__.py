"""Runtimes: the embedded runtime (default) and the faust app for Kafka (``altm.pipeline.runtime.kafka``)."""

from altm.pipeline.processors import default_processors
from altm.pipeline.runtime.embedded import EmbeddedRuntime

__all__ = ["EmbeddedRuntime", "default_processors"]
