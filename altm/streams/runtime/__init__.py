"""Runtimes: the embedded runtime (default) and the faust app for Kafka (``altm.streams.runtime.faust_app``)."""

from ..processors import default_processors
from .embedded import EmbeddedRuntime

__all__ = ["EmbeddedRuntime", "default_processors"]
