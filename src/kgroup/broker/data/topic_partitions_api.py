"""DescribeTopicPartitions (KIP-966; data/apis.py: the version served): topics and their
partitions' leaders, page by page. Kafka 4.4's Admin describeTopics (and so `kafka-topics
--describe`) asks it before Metadata.

How this works, as Kafka 4.4's broker answers it:
1. Which topics: every topic when none is named, else the named ones (each once), keeping
   only names at or after the cursor's topic (names compare as strings); a cursor whose topic
   is not among the named ones fails the request with INVALID_REQUEST (every topic asked for
   echoed with it, no partitions).
2. The topics in name order, partitions in index order, at most `response_partition_limit`
   partitions (capped at 2000, Kafka's max.request.partition.size.limit; a limit below 1 is
   1) in the answer. The cursor's topic starts at the cursor's partition, the others at 0.
   A topic cut short sets `next_cursor` to its first partition left out; a topic reached
   with the budget spent sets it to that topic's partition 0.
3. A named topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION (an illegal name
   INVALID_TOPIC_EXCEPTION) with no partitions, and costs nothing of the budget.
4. Each partition: its leader (in a cluster the node owning it; one moving is
   LEADER_NOT_AVAILABLE, leader -1), the leader epoch (0 on a single broker, one more per
   takeover in a cluster, as Metadata says: storage/leader_epochs.py,
   leader_epochs_api.py), replicas, in-sync and offline replicas as Metadata lists them
   (data/replicas.py); the eligible leader replicas and the last known ones (KIP-966's ELR)
   are empty: the nodes share one data dir, so no in-sync replica is ever left behind.
5. Authorized operations are every topic operation here; data/guards.py narrows them to the
   principal's, and refuses named topics it may not describe (TOPIC_AUTHORIZATION_FAILED,
   listed after the others) or leaves them out when listing all.
"""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.acl_bindings import ResourceType
from kgroup.broker.data.context import DataContext
from kgroup.broker.data.metadata_api import legal_topic_name
from kgroup.broker.data.replicas import replica_set
from kgroup.broker.internal_topics import is_internal
from kgroup.broker.security.authorized_operations import if_asked
from kgroup.error_codes import ErrorCode
from kgroup.storage import TopicMeta
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item

ZERO_UUID = uuid.UUID(int=0)
# Kafka's max.request.partition.size.limit (its default): the most partitions one answer holds.
MAX_PARTITIONS = 2000


def describe_topic_partitions(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The DescribeTopicPartitions response (see the module docstring)."""
    cls = response_class(header.api_key, header.api_version)
    topic_cls = item(cls, "topics")
    cursor = get(request, "cursor", None)
    cursor_topic = cursor.topic_name if cursor is not None else ""
    ctx.data.refresh_topics()
    known = ctx.data.topics()
    # 1. Which topics.
    if not request.topics:
        names = {n for n in known if n >= cursor_topic}
    else:
        names = {t.name for t in request.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return build(cls, throttle_time=0, next_cursor=None, topics=tuple(
                build(topic_cls, error_code=ErrorCode.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID,
                      is_internal=False, partitions=()) for t in request.topics))
    # 2. Page through them in name order.
    budget = max(1, min(MAX_PARTITIONS, int(request.response_partition_limit)))
    ops = if_asked(True, ResourceType.TOPIC)
    topics: list[Any] = []
    next_cursor = None
    for name in sorted(names):
        if budget == 0:
            next_cursor = build(item(cls, "next_cursor"), topic_name=name, partition_index=0)
            break
        meta = known.get(name)
        if meta is None:
            # 3. Unknown (or illegal) and named.
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if legal_topic_name(name) else ErrorCode.INVALID_TOPIC_EXCEPTION
            topics.append(build(topic_cls, error_code=code, name=name, topic_id=ZERO_UUID,
                                is_internal=is_internal(name), partitions=(), topic_authorized_operations=ops))
            continue
        first = int(cursor.partition_index) if cursor is not None and name == cursor_topic else 0
        last = min(meta.partitions, first + budget)
        topics.append(build(topic_cls, error_code=ErrorCode.NONE, name=name, topic_id=meta.topic_id,
                            is_internal=is_internal(name), topic_authorized_operations=ops,
                            partitions=tuple(_partition(ctx, cls, meta, p) for p in range(max(first, 0), last))))
        if last < meta.partitions:
            next_cursor = build(item(cls, "next_cursor"), topic_name=name, partition_index=last)
            break
        budget -= max(last - first, 0)
    return build(cls, throttle_time=0, topics=tuple(topics), next_cursor=next_cursor)


def _partition(ctx: DataContext, cls: type, meta: TopicMeta, p: int) -> Any:
    """4. One partition's leader, epoch and replicas."""
    part_cls = item(item(cls, "topics"), "partitions")
    leader = ctx.cluster.leader(meta.slots[p]) if p < len(meta.slots) else None
    replicas, in_sync, offline = replica_set(p, sorted(ctx.config.nodes), ctx.cluster.brokers(),
                                             leader, meta.replication_factor)
    return build(part_cls, error_code=ErrorCode.NONE if leader is not None else ErrorCode.LEADER_NOT_AVAILABLE,
                 partition_index=p, leader_id=leader if leader is not None else -1,
                 leader_epoch=ctx.data.leader_epoch(meta.slots[p]) if p < len(meta.slots) else 0,
                 replica_nodes=replicas, isr_nodes=in_sync, offline_replicas=offline,
                 eligible_leader_replicas=(), last_known_elr=())
