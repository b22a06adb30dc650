from altm.bus.kafka._bus import (
    MAX_RECORD_BYTES,
    EndOffsets,
    KafkaBus,
    KafkaConsumer,
    PartitionReader,
    RangeReader,
    parse_broker_url,
    read_range,
    record_size,
)
from altm.bus.kafka._group import GroupMember, Rebalance
from altm.bus.kafka._keys import KEYS_TOPIC, KafkaKeyStore, KeyTopicMissing

__all__ = ["KEYS_TOPIC", "MAX_RECORD_BYTES", "EndOffsets", "GroupMember", "KafkaBus", "KafkaConsumer",
           "KafkaKeyStore", "KeyTopicMissing", "PartitionReader", "RangeReader", "Rebalance", "parse_broker_url",
           "read_range", "record_size"]
