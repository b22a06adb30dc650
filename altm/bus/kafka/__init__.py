from altm.bus.kafka._bus import KafkaBus, KafkaConsumer, PartitionReader, parse_broker_url, read_range

__all__ = ["KafkaBus", "KafkaConsumer", "PartitionReader", "parse_broker_url", "read_range"]
