"""The classic `roundrobin` assignor.

All partitions of all subscribed topics, sorted by (topic, partition), are dealt to the
members in turn (static members first by instance id, then dynamic by member id), skipping
members not subscribed to the partition's topic — Kafka's RoundRobinAssignor.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.assignors.interface import EAGER, PartitionRacks
from kgroup.assignors.member_order import ordered_members
from kgroup.assignors.spec import Assignment, ClientMember, topic_partitions


class RoundRobinAssignor:
    """Kafka's `roundrobin` client-side assignor."""

    name = "roundrobin"
    supported_protocols = (EAGER,)

    def assign(
        self,
        members: Mapping[str, ClientMember],
        partitions_per_topic: Mapping[str, int],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """One assignment per member id."""
        order = ordered_members(members)
        subs = [frozenset(m.subscription.topics) for m in order]
        topics = sorted(frozenset().union(*subs)) if subs else []
        out: list[dict[str, list[int]]] = [{} for _ in order]
        n = len(order)
        cursor = 0
        for topic in topics:
            count = partitions_per_topic.get(topic, 0)
            if count <= 0:
                continue
            if all(topic in s for s in subs):
                # Every member takes this topic: deal without checking subscriptions.
                for p in range(count):
                    out[cursor].setdefault(topic, []).append(p)
                    cursor = (cursor + 1) % n
                continue
            for p in range(count):
                while topic not in subs[cursor]:
                    cursor = (cursor + 1) % n
                out[cursor].setdefault(topic, []).append(p)
                cursor = (cursor + 1) % n
        return {m.member_id: Assignment(topic_partitions(a), None) for m, a in zip(order, out)}
