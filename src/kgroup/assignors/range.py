"""The classic `range` assignor, with KIP-881 rack awareness.

Per topic, subscribers are ordered static members first (by instance id), then dynamic
members (by member id); each gets a contiguous run of P // N partitions and the first
P % N one more. When members report racks (subscription v3) and the leader knows replica
racks, each member first takes, within its quota, the lowest-numbered unassigned
partitions that have a replica on its rack; the rest then fill remaining quotas in
order, as Kafka's RangeAssignor does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.assignors.interface import EAGER, PartitionRacks
from kgroup.assignors.member_order import ordered_members
from kgroup.assignors.spec import Assignment, ClientMember, topic_partitions


class RangeAssignor:
    """Kafka's `range` client-side assignor."""

    name = "range"
    supported_protocols = (EAGER,)

    def assign(
        self,
        members: Mapping[str, ClientMember],
        partitions_per_topic: Mapping[str, int],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """One assignment per member id."""
        order = ordered_members(members)
        subscribers: dict[str, list[ClientMember]] = {}
        for m in order:
            for t in set(m.subscription.topics):
                subscribers.setdefault(t, []).append(m)
        out: dict[str, dict[str, Sequence[int]]] = {m.member_id: {} for m in order}
        for topic in sorted(subscribers):
            n = partitions_per_topic.get(topic, 0)
            if n <= 0:
                continue
            consumers = subscribers[topic]
            racks = partition_racks.get(topic) if partition_racks else None
            ranges = _rack_aware_ranges(consumers, n, racks) if racks else None
            if ranges is None:
                q, extra = divmod(n, len(consumers))
                start = 0
                for i, m in enumerate(consumers):
                    size = q + (1 if i < extra else 0)
                    if size:
                        out[m.member_id][topic] = range(start, start + size)
                    start += size
            else:
                for m, parts in zip(consumers, ranges):
                    if parts:
                        out[m.member_id][topic] = parts
        return {mid: Assignment(topic_partitions(a), None) for mid, a in out.items()}


def _rack_aware_ranges(
    consumers: list[ClientMember], n: int, racks: Sequence[frozenset[str]]
) -> list[list[int]] | None:
    """Per-consumer partitions with rack matching, or None when racks do not matter."""
    consumer_racks = {m.subscription.rack_id for m in consumers} - {None}
    if len(racks) != n or not consumer_racks:
        return None
    all_partition_racks = frozenset().union(*racks)
    if consumer_racks.isdisjoint(all_partition_racks):
        return None
    # Why: if every partition is on every rack, rack matching changes nothing.
    if all(r == all_partition_racks for r in racks):
        return None
    q, extra_left = divmod(n, len(consumers))
    assigned: list[list[int]] = [[] for _ in consumers]
    unassigned = list(range(n))

    def fill(match: bool) -> None:
        nonlocal unassigned, extra_left
        for i, m in enumerate(consumers):
            if not unassigned:
                return
            room = q + (1 if extra_left > 0 else 0) - len(assigned[i])
            if room <= 0:
                continue
            rack = m.subscription.rack_id
            if match and rack is None:
                continue
            picked = []
            for p in unassigned:
                if not match or rack in racks[p]:
                    picked.append(p)
                    if len(picked) == room:
                        break
            if not picked:
                continue
            taken = set(picked)
            unassigned = [p for p in unassigned if p not in taken]
            assigned[i].extend(picked)
            if len(assigned[i]) > q:
                extra_left -= 1

    fill(True)
    fill(False)
    return [sorted(a) for a in assigned]
