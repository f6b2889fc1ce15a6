"""kgroup: a Kafka-compatible broker built around an exact consumer-group coordinator."""
__version__ = "0.1.0"
