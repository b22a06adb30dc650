"""The embedded durable log: topics, partitions, offsets and consumer groups in one SQLite file."""

from altm.bus.embedded._log import (
    EmbeddedConsumer,
    EmbeddedLog,
    busy_log,
    default_log_path,
    log_topics,
    recent_values,
    writer_running,
    writers_kept_out,
)
from altm.bus.embedded._outbox import LocalOutbox, Pending

__all__ = ["EmbeddedConsumer", "EmbeddedLog", "LocalOutbox", "Pending", "busy_log", "default_log_path",
           "log_topics", "recent_values", "writer_running",
           "writers_kept_out"]
