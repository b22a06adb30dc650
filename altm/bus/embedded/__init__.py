"""The embedded durable log: topics, partitions, offsets and consumer groups in one SQLite file."""

from altm.bus.embedded._log import EmbeddedConsumer, EmbeddedLog, default_log_path, log_topics, recent_values
from altm.bus.embedded._outbox import LocalOutbox, Pending

__all__ = ["EmbeddedConsumer", "EmbeddedLog", "LocalOutbox", "Pending", "default_log_path", "log_topics",
           "recent_values"]
