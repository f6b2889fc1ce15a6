"""kgroup's asyncio Kafka client: ``Consumer``, ``Producer`` and ``AdminClient``."""

from kgroup.client.admin import AdminClient
from kgroup.client.consumer import CommitFailedError, Consumer, ConsumerRebalanceListener
from kgroup.client.producer import Producer
from kgroup.client.records import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = ["AdminClient", "CommitFailedError", "Consumer", "ConsumerRebalanceListener",
           "ConsumerRecord", "OffsetAndMetadata", "Producer", "RecordMetadata", "TopicPartition"]
