"""The pipeline: pure processors, the writer (the one door for writes), the runtime-neutral stage and
writer drivers, and the two runtimes that feed them (embedded; Kafka workers in
:mod:`altm.pipeline.runtime.kafka`)."""

from altm.pipeline._drivers import (
    LogBindingError,
    Publish,
    StageDriver,
    WriterDriver,
    check_log_binding,
    run_records,
)
from altm.pipeline._telemetry import dead_lettered
from altm.pipeline.processors import Processor, ProcessorContext, default_processors
from altm.pipeline.runtime import EmbeddedRuntime, ReplicaRuntime
from altm.pipeline.writer import WRITER_GROUP, Writer

__all__ = [
    "WRITER_GROUP",
    "EmbeddedRuntime",
    "LogBindingError",
    "Processor",
    "ProcessorContext",
    "Publish",
    "ReplicaRuntime",
    "StageDriver",
    "Writer",
    "WriterDriver",
    "check_log_binding",
    "dead_lettered",
    "default_processors",
    "run_records",
]
