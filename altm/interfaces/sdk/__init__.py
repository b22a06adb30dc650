"""The host SDK: publishing turn and control events to ALTM's Kafka topics from an agent process."""

from altm.interfaces.sdk._producer import HostProducer

__all__ = ["HostProducer"]
