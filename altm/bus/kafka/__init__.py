from altm.bus.kafka._bus import KafkaBus, KafkaConsumer, parse_broker_url

__all__ = ["KafkaBus", "KafkaConsumer", "parse_broker_url"]
