"""The server-side `simple` assignor of share groups (KIP-932), as Kafka 4.4's SimpleAssignor.

Members of a share group may share a partition: each record goes to one member at a time,
so a partition with several members is consumed cooperatively. Not registered with the
consumer protocol's assignors: it gives partitions to several members, which a consumer
group must never do.

How this works. Every target partition should have `desired sharing` = ceil(members /
partitions) members, and each member a share of the partition slots as even as the
division allows (member i of n gets ceil(x(i+1)) - ceil(x i) with x = sharing * partitions
/ n). Starting from the current targets, it is sticky:

1. Keep what each member holds of the topics it is asked to cover (drop other topics).
2. A member holding more than its count gives up the excess.
3. A partition held by more members than the sharing loses the excess members.
4. Partitions short of the sharing go, one slot at a time, to members short of their count
   (cycling over them; a member never takes a partition twice).

With every member subscribed alike (homogeneous) this runs once over all the partitions;
otherwise once per topic over that topic's subscribers. Which partition or member goes
first at each step is the order Kafka's JVM walks its hash maps and sets in, so kgroup
simulates them (`kgroup.java_hash.JavaHashMap`, keyed by the same hash codes: member ids
as Strings, topic ids as Kafka Uuids, member indexes and partitions as Integers, a topic
partition as the record (Uuid, int)). Given the same ids, the placement is Kafka's
(tests/reference/test_share_assignor.py holds it to Kafka's own class).

Only the assignable partitions (`GroupSpec.assignable`: the share partitions the group has
initialized) are placed; a partition a member holds stays with it while its topic is
subscribed, assignable or not, as in Kafka.

One Kafka 4.4 defect is not copied: with members subscribed differently, a topic no member
subscribes to any more is never visited, so Kafka leaves its partitions in the targets of
the members that held them; here they are dropped.

Pure and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kgroup.assignors.spec import GroupSpec
from kgroup.java_hash import (
    JavaHashMap,
    java_hash_order,
    java_int_hashcode,
    java_record_hashcode,
    java_string_hashcode,
    java_uuid_hashcode,
)

Assignment = dict[str, set[int]]


def _partition_hash(tp: tuple[str, int]) -> int:
    # org.apache.kafka.server.common.TopicIdPartition(Uuid topicId, int partitionId), a record
    return java_record_hashcode(java_uuid_hashcode(tp[0]), tp[1])


def _new_hash_map_capacity(mappings: int) -> int:
    """AssignorHelpers.newHashMap / newHashSet: room for `mappings` + 1 without growing."""
    return int((mappings + 1) / 0.75 + 1.0)


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    precise = float(sharing * partitions) / float(members)
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


class SimpleShareAssignor:
    """KIP-932 `simple` share-group assignor (Kafka 4.4's SimpleAssignor)."""

    name = "simple"

    def assign(
        self, spec: GroupSpec, topics: Mapping[str, int]
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """Target assignment: member id -> topic key -> sorted partitions. A member's
        `assignment` is its current target; `topics` holds the subscribed topics that
        exist, and `spec.assignable` which of their partitions may be placed."""
        if not spec.members:
            return {}
        # GroupSpecImpl's members: a HashMap<String, ...> the builder puts them in.
        ids = java_hash_order(sorted(spec.members))
        subs = [self._subscription(spec, mid, topics) for mid in ids]
        old = [self._current(spec.members[mid].assignment) for mid in ids]
        homogeneous = spec.homogeneous if spec.homogeneous is not None else len(
            {frozenset(s) for s in subs}) == 1
        if homogeneous:
            new = _Homogeneous(subs[0], spec, topics, old).build()
        else:
            new = _heterogeneous(subs, spec, topics, old)
        return {mid: {t: tuple(sorted(ps)) for t, ps in sorted(new[i].items()) if ps}
                for i, mid in enumerate(ids)}

    @staticmethod
    def _subscription(spec: GroupSpec, member_id: str, topics: Mapping[str, int]) -> list[str]:
        """The member's subscribed topic ids that exist, in the order Kafka iterates them:
        its topic names' HashSet, each resolved to its id."""
        subscribed = spec.members[member_id].subscribed_topics
        names = spec.topic_names or {}
        by_name = sorted((names.get(t, t), t) for t in subscribed if t in topics)
        order = JavaHashMap.set_of([n for n, _ in by_name])
        ids = dict(by_name)
        return [ids[n] for n in order.keys()]

    @staticmethod
    def _current(assignment: Mapping[str, tuple[int, ...]]) -> list[tuple[str, list[int]]]:
        """A member's current target as Kafka's maps iterate it: topics by Uuid hash,
        partitions as an Integer HashSet."""
        order = java_hash_order(sorted(t for t, ps in assignment.items() if ps), java_uuid_hashcode)
        return [(t, JavaHashMap.set_of(sorted(assignment[t]), java_int_hashcode).keys()) for t in order]


def _copy(old: list[tuple[str, list[int]]]) -> Assignment:
    return {t: set(ps) for t, ps in old}


class _Builder:
    """What both of Kafka's builders do alike. A slot key is what `by_partition` is keyed by:
    a (topic, partition) pair when all topics are placed at once, a partition when one
    topic is (`topic` set)."""

    topic: str | None = None

    def __init__(self, old: list[list[tuple[str, list[int]]]], new: dict[int, Assignment],
                 sharing: int, desired: list[int], key_hash, slots: int, members: int) -> None:
        self.old, self.new = old, new
        self.sharing, self.desired = sharing, desired
        self.key_hash = key_hash
        self.by_partition = JavaHashMap(key_hash, _new_hash_map_capacity(slots))
        self.by_member = JavaHashMap(java_int_hashcode, _new_hash_map_capacity(members))

    def _where(self, key) -> tuple[str, int]:
        return (self.topic, key) if self.topic is not None else key

    def _new(self, i: int) -> Assignment:
        got = self.new.get(i)
        if got is None:
            got = self.new[i] = _copy(self.old[i])
        return got

    def _held(self, i: int) -> JavaHashMap:
        return self.by_member.compute_if_absent(i, lambda: JavaHashMap(self.key_hash))

    def _hold(self, key, i: int) -> None:
        """Slot `key` taken by member i as it stands (step 1)."""
        self.by_partition.compute_if_absent(key, lambda: JavaHashMap(java_int_hashcode)).put(i)
        self._held(i).put(key)

    def _revoke_overshared(self) -> list[int]:
        """Step 3; the members that lost a slot."""
        lost = []
        for key, members in self.by_partition.items():
            count = len(members)
            if count <= self.sharing:
                continue
            topic, partition = self._where(key)
            for i in members.keys():
                parts = self._new(i).get(topic)
                if parts is not None and partition in parts:
                    parts.discard(partition)
                    count -= 1
                    members.remove(i)
                    self.by_member.get(i).remove(key)
                    lost.append(i)
                if count <= self.sharing:
                    break
        return lost

    def _assign_remaining(self, unfilled: JavaHashMap) -> None:
        """Step 4: slots short of the sharing, in the table's order, to the unfilled members
        in turn."""
        cycle = _Cycle(unfilled)
        for key, members in self.by_partition.items():
            if len(members) < self.sharing:
                to_make = self.sharing - len(members)
                topic, partition = self._where(key)
                while to_make > 0:
                    i = cycle.next()
                    if i is None:
                        break
                    if i in members:
                        continue
                    self._new(i).setdefault(topic, set()).add(partition)
                    held = self._held(i)
                    held.put(key)
                    to_make -= 1
                    cycle.assigned = True
                    if len(held) >= self.desired[i]:
                        cycle.remove()
            if not len(unfilled):
                break


class _Homogeneous(_Builder):
    """SimpleHomogeneousAssignmentBuilder: all partitions of the shared subscription at once."""

    def __init__(self, subscribed: list[str], spec: GroupSpec, topics: Mapping[str, int],
                 old: list[list[tuple[str, list[int]]]]) -> None:
        n = len(old)
        self.subscribed = subscribed
        self.targets = [(t, p) for t in subscribed for p in spec.partitions(t, topics.get(t, 0))]
        sharing = 0 if not self.targets else (n + len(self.targets) - 1) // len(self.targets)
        super().__init__(old, {}, sharing, _desired_counts(sharing, len(self.targets), n), _partition_hash,
                         len(self.targets), n)
        self.unfilled = JavaHashMap(java_int_hashcode, _new_hash_map_capacity(n))
        self.overfilled = JavaHashMap(java_int_hashcode, _new_hash_map_capacity(n))

    def build(self) -> list[Assignment]:
        if not self.subscribed:
            return [{} for _ in self.old]
        self._revoke_unassignable()
        self._revoke_overfilled()
        for i in self._revoke_overshared():
            self.unfilled.put(i)
        for tp in self.targets:
            self.by_partition.compute_if_absent(tp, lambda: JavaHashMap(java_int_hashcode))
        if len(self.unfilled):
            self._assign_remaining(self.unfilled)
        return [self.new[i] if i in self.new else _copy(self.old[i]) for i in range(len(self.old))]

    def _revoke_unassignable(self) -> None:
        subscribed = set(self.subscribed)
        for i, old in enumerate(self.old):
            count = 0
            copied = False
            for topic, parts in old:
                if topic in subscribed:
                    for p in parts:
                        self._hold((topic, p), i)
                        count += 1
                        if count >= self.desired[i] and not copied:
                            self._new(i)
                            copied = True
                else:
                    self._new(i).pop(topic, None)
                    copied = True
            if count < self.desired[i]:
                self.unfilled.put(i)
            elif count > self.desired[i]:
                self.overfilled.put(i)

    def _revoke_overfilled(self) -> None:
        for i in self.overfilled.keys():
            held = self.by_member.get(i)
            if len(held) <= self.desired[i]:
                continue
            for tp in held.keys():
                self.new[i][tp[0]].discard(tp[1])
                self.by_partition.get(tp).remove(i)
                held.remove(tp)
                if len(held) == self.desired[i]:
                    break


class _Cycle:
    """Kafka's walk over the unfilled members: one iterator, started again from the top when
    it runs out if the last pass assigned anything (`next` None: stop). `remove` drops the
    member just returned from the set, as Java's `iterator.remove()`."""

    def __init__(self, members: JavaHashMap) -> None:
        self.members = members
        self.order = members.keys()
        self.at = 0
        self.assigned = False
        self.current = None

    def next(self):
        if self.at >= len(self.order):
            if not self.assigned:
                return None
            self.order, self.at, self.assigned = self.members.keys(), 0, False
            if not self.order:          # Kafka's next() would throw here; never reached in practice
                return None
        self.current = self.order[self.at]
        self.at += 1
        return self.current

    def remove(self) -> None:
        self.members.remove(self.current)


def _heterogeneous(subs: list[list[str]], spec: GroupSpec, topics: Mapping[str, int],
                   old: list[list[tuple[str, list[int]]]]) -> list[Assignment]:
    """SimpleHeterogeneousAssignmentBuilder: topic by topic, over its subscribers."""
    n = len(old)
    union = JavaHashMap(java_uuid_hashcode)
    for s in subs:
        for t in s:
            union.put(t)
    new: dict[int, Assignment] = {}
    for topic in union.keys():
        subscribers = [i for i, s in enumerate(subs) if topic in s]
        _TopicBuilder(topic, n, spec.partitions(topic, topics.get(topic, 0)), subscribers, old, new).build()
    out = [new[i] if i in new else _copy(old[i]) for i in range(n)]
    for a in out:                     # Kafka's defect, not copied: topics nobody subscribes to
        for t in [t for t in a if t not in union]:
            del a[t]
    return out


class _TopicBuilder(_Builder):
    """TopicAssignmentPartialBuilder: one topic's partitions over its subscribers."""

    def __init__(self, topic: str, n: int, targets: list[int], subscribers: list[int],
                 old: list[list[tuple[str, list[int]]]], new: dict[int, Assignment]) -> None:
        self.topic, self.targets, self.subscribers, self.n = topic, targets, subscribers, n
        sharing = 0 if not targets else (len(subscribers) + len(targets) - 1) // len(targets)
        desired = [0] * n
        for k, count in enumerate(_desired_counts(sharing, len(targets), len(subscribers))):
            desired[subscribers[k]] = count
        super().__init__(old, new, sharing, desired, java_int_hashcode, len(targets), len(subscribers))

    def build(self) -> None:
        # Step 1: every topic visited is subscribed by some member (Kafka's branch for a topic
        # nobody subscribes to is never taken: it never visits one).
        for i, old in enumerate(self.old):
            for p in dict(old).get(self.topic, ()):
                self._hold(p, i)
        self._revoke_overfilled()
        self._revoke_overshared()
        sized = _new_hash_map_capacity(len(self.subscribers))
        for p in self.targets:
            self.by_partition.compute_if_absent(p, lambda: JavaHashMap(java_int_hashcode, sized))
        unfilled = JavaHashMap(java_int_hashcode, _new_hash_map_capacity(self.n))
        for i in self.subscribers:
            held = self.by_member.get(i)
            if (0 if held is None else len(held)) < self.desired[i]:
                unfilled.put(i)
        self._assign_remaining(unfilled)

    def _revoke_overfilled(self) -> None:
        for i, held in self.by_member.items():
            if len(held) <= self.desired[i]:
                continue
            for p in held.keys():
                if len(held) <= self.desired[i]:
                    break
                self.by_partition.get(p).remove(i)
                held.remove(p)
                self._new(i)[self.topic].discard(p)


__all__ = ["SimpleShareAssignor", "java_string_hashcode"]
