"""WriteTxnMarkers (v1-2, as Kafka 4.4 serves it): a transaction coordinator on another node
asks this node, the leader of some of its transaction's partitions or the coordinator of
some of its groups, to end the transaction there.

Each marker's partitions are written as the coordinator here would write its own
(txn_markers.append_markers): a COMMIT or ABORT control batch through the partition's
producer state, which refuses a producer epoch older than the partition has seen
(INVALID_PRODUCER_EPOCH) and a coordinator epoch older than the last coordinator that wrote
there (TRANSACTION_COORDINATOR_FENCED: the sender lost the transaction's partition to a
newer owner); answered once durable. A partition this node does not lead is
NOT_LEADER_OR_FOLLOWER, one that does not exist UNKNOWN_TOPIC_OR_PARTITION. A partition of
`__consumer_offsets` stands for a group-metadata partition: the producer's pending
transactional offsets there are committed or dropped (NOT_COORDINATOR if this node does not
coordinate it, COORDINATOR_LOAD_IN_PROGRESS while it loads it). Who may send it: Kafka's
CLUSTER_ACTION on the cluster (guards.write_txn_markers).

The answer is laid out as Kafka's is: Kafka collects each producer id's partition errors in
Java hash maps (by producer id, then by partition, then by topic name) and answers in their
iteration order, so a marker that names no partition is not answered, two markers of one
producer id are answered as one, and the order is the maps' (`java_hash_order`).
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.data.producer_states import ProducerStates
from kgroup.broker.durability import Durability
from kgroup.broker.groups.group_api import GroupApi
from kgroup.broker.txn.txn_markers import OFFSETS_TOPIC, append_markers
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.transactions.messages import TxnOffsetsMarker
from kgroup.storage import DataDir
from kgroup.java_hash import java_hash_order, java_string_hashcode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item

E = ErrorCode


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _long_hash(v: int) -> int:
    u = v & 0xFFFFFFFFFFFFFFFF
    return _int32(u ^ (u >> 32))


def _partition_hash(tp: tuple[str, int]) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode."""
    return _int32(31 * (31 + tp[1]) + java_string_hashcode(tp[0]))


class WriteMarkersApi:
    """The partition leader's and group coordinator's side of WriteTxnMarkers."""

    def __init__(self, data: DataDir, producers: ProducerStates, durability: Durability, groups: GroupApi) -> None:
        self.data = data
        self.producers = producers
        self.durability = durability
        self.groups = groups

    async def write_txn_markers(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        marker_cls = item(cls, "markers")
        topic_cls = item(marker_cls, "topics")
        part_cls = item(topic_cls, "partitions")
        errors: dict[int, dict[tuple[str, int], ErrorCode]] = {}
        for m in req.markers:
            asked = list(dict.fromkeys((t.name, int(p)) for t in m.topics for p in t.partition_indexes))
            codes = await append_markers(self.data, self.producers, self.durability, int(m.producer_id),
                                         int(m.producer_epoch), bool(m.transaction_result), int(m.coordinator_epoch),
                                         [tp for tp in asked if tp[0] != OFFSETS_TOPIC])
            for _, p in (tp for tp in asked if tp[0] == OFFSETS_TOPIC):
                codes[(OFFSETS_TOPIC, p)] = await self._end_offsets(m, p)
            if asked:
                errors.setdefault(int(m.producer_id), {}).update((tp, codes[tp]) for tp in asked)
        results = []
        for producer_id in java_hash_order(list(errors), _long_hash):
            by_topic: dict[str, list] = {}
            for t, p in java_hash_order(list(errors[producer_id]), _partition_hash):
                by_topic.setdefault(t, []).append(
                    build(part_cls, partition_index=p, error_code=errors[producer_id][(t, p)]))
            results.append(build(marker_cls, producer_id=producer_id, topics=tuple(
                build(topic_cls, name=t, partitions=tuple(by_topic[t]))
                for t in java_hash_order(list(by_topic), java_string_hashcode))))
        return build(cls, markers=tuple(results))

    async def _end_offsets(self, marker: Any, slot: int) -> ErrorCode:
        """Commit or drop the producer's pending offsets in group-metadata partition `slot`."""
        shards = self.groups.shards
        if not 0 <= slot < len(shards):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        shard = shards[slot]
        if shard is None:
            return E.COORDINATOR_LOAD_IN_PROGRESS if self.groups.cluster.loading(slot) else E.NOT_COORDINATOR
        try:
            await shard.call(shard.coordinator.txn_offsets_marker, TxnOffsetsMarker(
                int(marker.producer_id), int(marker.producer_epoch), bool(marker.transaction_result), ()))
        except GroupError as exc:
            return exc.code
        return E.NONE
