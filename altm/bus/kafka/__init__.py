from altm.bus.kafka._bus import KafkaBus, KafkaConsumer, PartitionReader, parse_broker_url, read_range
from altm.bus.kafka._group import GroupMember, Rebalance

__all__ = ["GroupMember", "KafkaBus", "KafkaConsumer", "PartitionReader", "Rebalance", "parse_broker_url",
           "read_range"]
