"""Runtimes: the embedded runtime (default) and the faust app for Kafka (``altm.streams.runtime.faust_app``)."""

from .embedded import EmbeddedRuntime, default_processors

__all__ = ["EmbeddedRuntime", "default_processors"]
