"""kgroup's asyncio Kafka client: ``Consumer``, ``Producer`` and ``AdminClient``, all over a
``Cluster`` (connections, metadata, leaders, coordinators and the retries when they move)."""

from kgroup.client.admin import AdminClient
from kgroup.client.cluster import Cluster
from kgroup.client.consumer import CommitFailedError, Consumer, ConsumerRebalanceListener
from kgroup.client.producer import Producer
from kgroup.client.records import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition
from kgroup.client.share_consumer import AcknowledgeType, ShareConsumer, ShareConsumerError, ShareRecord

__all__ = ["AcknowledgeType", "AdminClient", "Cluster", "CommitFailedError", "Consumer",
           "ConsumerRebalanceListener", "ConsumerRecord", "OffsetAndMetadata", "Producer",
           "RecordMetadata", "ShareConsumer", "ShareConsumerError", "ShareRecord", "TopicPartition"]
