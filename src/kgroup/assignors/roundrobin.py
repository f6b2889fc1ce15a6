"""The classic `roundrobin` assignor.

All partitions of all subscribed topics, sorted by (topic, partition), are dealt to the
members in turn (static members first by instance id, then dynamic by member id), skipping
members not subscribed to the partition's topic — Kafka's RoundRobinAssignor.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import chain, repeat

from kgroup.assignors.builtin_client import BuiltinClientAssignor
from kgroup.assignors.interface import PartitionRacks
from kgroup.assignors.passes import drain
from kgroup.assignors.spec import ClientMember, TopicPartitions, topic_lists


class RoundRobinAssignor(BuiltinClientAssignor):
    """Kafka's `roundrobin` client-side assignor."""

    name = "roundrobin"

    def _place(self, order: list[ClientMember], partitions_per_topic: Mapping[str, int],
               partition_racks: PartitionRacks | None) -> list[TopicPartitions]:
        n = len(order)
        # Members with the same topic list share one subscription set.
        keys, which = topic_lists(order)
        distinct = list(map(frozenset, keys))
        # Subscribers (member indexes, in order) per set of topic lists that have a topic.
        subscribers: dict[tuple[int, ...], Sequence[int]] = {}
        everyone = range(n)
        runs_of: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        out: list[dict[str, tuple[int, ...]]] = [{} for _ in order]
        cursor = 0
        for topic in sorted(frozenset().union(*distinct)):
            count = partitions_per_topic.get(topic, 0)
            if count <= 0:
                continue
            # Dealing one partition at a time, skipping non-subscribers, hands the k-th
            # partition to the k-th subscriber (cyclically) from the first one at or after
            # the cursor; so each subscriber gets every L-th partition from its position.
            having = tuple(c for c, s in enumerate(distinct) if topic in s)
            takers = subscribers.get(having)
            if takers is None:
                takers = subscribers[having] = (
                    everyone if len(having) == len(distinct)
                    else [i for i, c in enumerate(which) if c in having])
            pos = bisect_left(takers, cursor) % len(takers)
            size = len(takers)
            # The k-th taker from pos gets partitions k, k + size, ...: the runs depend only
            # on (count, size), so topics alike share them (no tuple per member and topic:
            # at 1M partitions that is a million allocations, and GC time). map() stops at
            # the shorter of the takers and the runs.
            runs = runs_of.get((count, size))
            if runs is None:
                runs = runs_of[count, size] = [tuple(range(k, count, size))
                                               for k in range(min(count, size))]
            drain(map(dict.__setitem__, map(out.__getitem__, chain(takers[pos:], takers[:pos])),
                       repeat(topic), runs))
            cursor = (takers[(pos + count - 1) % size] + 1) % n
        # Topics went in sorted, each run ascending: already the wire shape.
        return [tuple(a.items()) for a in out]
