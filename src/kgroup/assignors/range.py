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
from itertools import chain, repeat

from kgroup.assignors.builtin_client import BuiltinClientAssignor
from kgroup.assignors.interface import PartitionRacks
from kgroup.assignors.passes import drain
from kgroup.assignors.spec import ClientMember, TopicPartitions, topic_lists


class RangeAssignor(BuiltinClientAssignor):
    """Kafka's `range` client-side assignor."""

    name = "range"

    def _place(self, order: list[ClientMember], partitions_per_topic: Mapping[str, int],
               partition_racks: PartitionRacks | None) -> list[TopicPartitions]:
        # Per topic, its subscribers in assignor order. Members with the same topic list
        # share one entry (10,000 members x 1,000 topics would be 10M appends otherwise),
        # and topics subscribed by the same set of entries share one subscriber list.
        keys, entry = topic_lists(order)
        entry_members: list[list[int]] = [[] for _ in keys]
        for i, e in enumerate(entry):
            entry_members[e].append(i)
        topic_entries: dict[str, list[int]] = {}
        for e, key in enumerate(keys):
            for t in set(key):
                topic_entries.setdefault(t, []).append(e)
        merged: dict[tuple[int, ...], list[int]] = {}
        out: list[dict[str, tuple[int, ...]]] = [{} for _ in order]
        runs_of: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        for topic in sorted(topic_entries):
            n = partitions_per_topic.get(topic, 0)
            if n <= 0:
                continue
            es = tuple(topic_entries[topic])
            consumers = merged.get(es)
            if consumers is None:
                consumers = merged[es] = (
                    entry_members[es[0]] if len(es) == 1
                    else sorted(chain.from_iterable(map(entry_members.__getitem__, es))))
            racks = partition_racks.get(topic) if partition_racks else None
            ranges = _rack_aware_ranges([order[i] for i in consumers], n, racks) if racks else None
            if ranges is None:
                # The runs depend only on (partitions, subscribers): topics alike share
                # them (a tuple per member and topic is a million allocations at 1M
                # partitions, and GC time). With fewer partitions than subscribers only the
                # first n get one; map() stops at the shorter list.
                runs = runs_of.get((n, len(consumers)))
                if runs is None:
                    runs = runs_of[n, len(consumers)] = _runs(n, len(consumers))
                drain(map(dict.__setitem__, map(out.__getitem__, consumers), repeat(topic),
                           runs))
            else:
                for i, parts in zip(consumers, ranges):
                    if parts:
                        out[i][topic] = tuple(parts)
        # Topics went in sorted, partition runs ascending: already the wire shape.
        return [tuple(a.items()) for a in out]


def _runs(n: int, subscribers: int) -> list[tuple[int, ...]]:
    """Range's split of n partitions: P // N each, the first P % N one more (none empty)."""
    q, extra = divmod(n, subscribers)
    runs = []
    start = 0
    for k in range(min(n, subscribers)):
        size = q + 1 if k < extra else q
        runs.append(tuple(range(start, start + size)))
        start += size
    return runs


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
