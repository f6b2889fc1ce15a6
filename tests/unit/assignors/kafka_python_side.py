"""Run kafka-python 3.0.12's assignors on the same inputs as ours (for cross-checks and the
benchmark). kafka-python's assignors take a cluster object with partitions_for_topic() and
JoinGroup members with decoded ConsumerProtocolSubscription metadata."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KSub
from kafka.structs import TopicPartition


class Cluster:
    """The ClusterMetadata methods kafka-python's assignors call."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def topics(self):
        return set(self.counts)

    def partitions_for_topic(self, topic: str):
        n = self.counts.get(topic)
        return None if n is None else set(range(n))


@dataclass
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: KSub


def run(name: str, subs: Mapping[str, frozenset[str]], counts: Mapping[str, int],
        owned: Mapping[str, Mapping[str, tuple[int, ...]]] | None = None,
        generation: int = 1, instance_ids: Mapping[str, str] | None = None,
        ) -> dict[str, dict[str, tuple[int, ...]]]:
    """kafka-python's assignment as member -> topic -> partitions."""
    owned = owned or {}
    members = []
    for m in sorted(subs):
        mine = owned.get(m, {})
        if name == "sticky":
            tps = [TopicPartition(t, p) for t, ps in sorted(mine.items()) for p in ps]
            meta = StickyPartitionAssignor._metadata(sorted(subs[m]), tps if mine else None,
                                                     generation)
        else:
            TP = KSub.TopicPartition
            meta = KSub(version=2, topics=sorted(subs[m]), user_data=b"",
                        owned_partitions=[TP(topic=t, partitions=list(ps))
                                          for t, ps in sorted(mine.items())],
                        generation_id=generation if mine else -1)
        members.append(JoinMember(m, (instance_ids or {}).get(m), meta))
    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor,
                "cooperative-sticky": CooperativeStickyAssignor}[name]
    if name in ("sticky", "cooperative-sticky"):
        assignor = assignor()
    out = assignor.assign(Cluster(counts), members)
    result: dict[str, dict[str, tuple[int, ...]]] = {}
    for m, a in out.items():
        mine: dict[str, tuple[int, ...]] = {}
        for item in a.assigned_partitions:
            # Entries are (topic, partitions) tuples or TopicPartition structs.
            topic, parts = (item.topic, item.partitions) if hasattr(item, "topic") else item
            if parts:
                mine[topic] = tuple(sorted(parts))
        result[m] = mine
    return result
