"""kgroup's asyncio Kafka client: ``Consumer``, ``Producer`` and ``AdminClient``, all over a
``ClusterClient`` (connections, metadata, leaders, coordinators and the retries when they move);
``Membership`` of a group of any protocol type, and on it ``LeaderElection`` and
``TaskAssignment``."""

from kgroup.client.admin import AdminClient
from kgroup.client.cluster import ClusterClient
from kgroup.client.consumer import CommitFailedError, Consumer, ConsumerRebalanceListener
from kgroup.client.leader_election import LeaderElection
from kgroup.client.membership import GroupMember, Membership
from kgroup.client.producer import Producer
from kgroup.client.records import BatchMetadata, ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition
from kgroup.client.share_consumer import AcknowledgeType, ShareConsumer, ShareConsumerError, ShareRecord
from kgroup.client.task_assignment import TaskAssignment
from kgroup.client.transactions import GroupMetadata, ProducerFenced, TransactionError

__all__ = ["AcknowledgeType", "AdminClient", "BatchMetadata", "ClusterClient", "CommitFailedError", "Consumer",
           "ConsumerRebalanceListener", "ConsumerRecord", "GroupMember", "GroupMetadata", "LeaderElection",
           "Membership", "OffsetAndMetadata", "Producer", "ProducerFenced", "RecordMetadata", "ShareConsumer",
           "ShareConsumerError", "ShareRecord", "TaskAssignment", "TopicPartition", "TransactionError"]
