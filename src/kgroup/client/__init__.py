"""kgroup's asyncio Kafka client: ``Consumer``, ``Producer`` and ``AdminClient``, all over a
``ClusterClient`` (connections, metadata, leaders, coordinators and the retries when they move);
``Membership`` of a group of any protocol type, and on it ``LeaderElection`` and
``TaskAssignment``.

The names below load with their module on first use (PEP 562): a process that needs only the
consumer — a Spark task reading a range — does not pay for the producer, the share consumer
and the group helpers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "AdminClient": "admin",
    "ClusterClient": "cluster",
    "CommitFailedError": "consumer", "Consumer": "consumer", "ConsumerRebalanceListener": "consumer",
    "LeaderElection": "leader_election",
    "GroupMember": "membership", "Membership": "membership",
    "Producer": "producer",
    "BatchMetadata": "records", "ConsumerRecord": "records", "OffsetAndMetadata": "records", "RecordMetadata": "records",
    "TopicPartition": "records",
    "AcknowledgeType": "share_consumer", "ShareConsumer": "share_consumer",
    "ShareConsumerError": "share_consumer", "ShareRecord": "share_consumer",
    "TaskAssignment": "task_assignment",
    "GroupMetadata": "transactions", "ProducerFenced": "transactions", "TransactionError": "transactions",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
