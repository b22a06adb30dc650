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
from altm.bus._records import (
    SOURCE_MS_HEADER,
    dead_letter_record,
    host_record,
    pack_headers,
    source_header,
    source_ms,
    trace_context,
    trace_headers,
    unpack_headers,
)

__all__ = [
    "SOURCE_MS_HEADER",
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
    "pack_headers",
    "source_header",
    "source_ms",
    "trace_context",
    "trace_headers",
    "unpack_headers",
]
