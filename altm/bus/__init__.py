"""The bus port and its adapters (embedded SQLite log, Apache Kafka)."""

from altm.bus._base import (
    Bus,
    BusError,
    Consumer,
    Headers,
    OutgoingRecord,
    Record,
    RecordMetadata,
    TopicPartition,
)

__all__ = [
    "Bus",
    "BusError",
    "Consumer",
    "Headers",
    "OutgoingRecord",
    "Record",
    "RecordMetadata",
    "TopicPartition",
]
