from altm.bus.embedded._log import EmbeddedConsumer, EmbeddedLog, default_log_path

__all__ = ["EmbeddedConsumer", "EmbeddedLog", "default_log_path"]
