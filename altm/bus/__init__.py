"""The bus port and its adapters (embedded SQLite log, Apache Kafka), chosen by URL scheme in wiring."""

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
from altm.bus._records import dead_letter_record, host_record

__all__ = [
    "Bus",
    "BusError",
    "Consumer",
    "Headers",
    "OutgoingRecord",
    "Record",
    "RecordMetadata",
    "TopicPartition",
    "dead_letter_record",
    "host_record",
]
