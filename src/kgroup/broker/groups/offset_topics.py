"""Offsets of topics and partitions that do not exist: refused per partition, as Kafka does.

Kafka checks every partition of an OffsetCommit (AlterConsumerGroupOffsets is an
OffsetCommit on the wire), TxnOffsetCommit and OffsetDelete against its metadata before the
group coordinator sees the request: one whose topic is unknown, or whose partition is past
the topic's count, gets UNKNOWN_TOPIC_OR_PARTITION in the response and never reaches the
group, so nothing is stored for it -- and when no partition is left, the group is not asked
at all (a simple commit of only unknown partitions creates no group). Asked of Kafka 4.4
itself: OffsetFetch is not checked (an unknown partition has no committed offset: -1 and
no error), and OffsetDelete of a group that does not exist is GROUP_ID_NOT_FOUND whatever
its partitions.

The topics are the shard's (`ShardState.topics`, set by the broker whenever a topic is
created, grown or deleted), the same image AddPartitionsToTxn checks partitions against. A
stand-in for a shard this node does not serve knows no topics: its partitions all get its
NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS), and the client asks the coordinator.
AlterShareGroupOffsets checks the same way (`unknown_in`, against the topics its API reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kgroup.core.errors import ErrorCode

UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def shard_topics(shard: Any) -> Mapping[str, tuple[str, int]] | None:
    """The topic image of a served shard (name -> (topic id, partitions)); None for a stand-in."""
    state = getattr(shard.coordinator, "shard", None)
    return None if state is None else state.topics


def unknown_partitions(shard: Any, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """UNKNOWN_TOPIC_OR_PARTITION for each (topic, partition) the shard's topics lack."""
    topics = shard_topics(shard)
    return {} if topics is None else unknown_in(topics, partitions)


def unknown_in(topics: Mapping[str, tuple[str, int]],
               partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """UNKNOWN_TOPIC_OR_PARTITION for each (topic, partition) that `topics` lacks."""
    return {(t, p): UNKNOWN for t, p in partitions if not 0 <= p < topics.get(t, ("", 0))[1]}
