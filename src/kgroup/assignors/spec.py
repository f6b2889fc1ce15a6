"""Data types the assignors take and return.

Client side (classic groups, run by the group leader): a member's decoded ConsumerProtocol
`Subscription`, the `Assignment` the leader hands back, and `ClientMember`, which is what the
leader knows about each member.

Server side (consumer groups, KIP-848, run by the coordinator): `MemberSpec` and `GroupSpec`.
Topics there are keyed by an opaque string (the coordinator passes topic ids), partition
lists are sorted tuples of ints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# (topic, sorted partitions) pairs, sorted by topic: the wire shape of owned/assigned lists.
TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerProtocolSubscription v0–v3: what a member asks for when it joins."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """ConsumerProtocolAssignment v0–v3: what the leader gives a member."""

    partitions: TopicPartitions = ()
    user_data: bytes | None = None

    def as_dict(self) -> dict[str, tuple[int, ...]]:
        """The assigned partitions as topic -> partitions."""
        return {topic: parts for topic, parts in self.partitions}


@dataclass(frozen=True, slots=True)
class ClientMember:
    """A member of a classic group as seen by the leader's client-side assignor."""

    member_id: str
    group_instance_id: str | None
    subscription: Subscription


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A consumer-group member as seen by a server-side assignor.

    `assignment` is the member's current target assignment: topic key -> sorted partitions.
    """

    member_id: str
    subscribed_topics: frozenset[str]
    instance_id: str | None = None
    rack_id: str | None = None
    assignment: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Everything a server-side assignor needs besides partition counts.

    `partition_racks`, when known, maps a topic key to one frozenset of replica racks per
    partition; assignors that are not rack-aware ignore it. The share assignor also reads
    `homogeneous` and `topic_names`.
    """

    members: Mapping[str, MemberSpec]
    partition_racks: Mapping[str, tuple[frozenset[str], ...]] | None = None
    # Kafka's subscription type (HOMOGENEOUS: every member subscribes to the same topic
    # names, existing or not); None: the assignor judges by `subscribed_topics`.
    homogeneous: bool | None = None
    # topic key -> topic name, for assignors that walk topics in Kafka's name order.
    topic_names: Mapping[str, str] | None = None
    # topic key -> the partitions that may be assigned (Kafka's isPartitionAssignable: a
    # share group's initialized partitions); None: every partition of every topic.
    assignable: Mapping[str, frozenset[int]] | None = None

    def partitions(self, topic: str, count: int) -> list[int]:
        """The assignable partitions of `topic` (of `count`), in partition order."""
        if self.assignable is None:
            return list(range(count))
        allowed = self.assignable.get(topic, frozenset())
        return [p for p in range(count) if p in allowed]


def topic_lists(members: Sequence[ClientMember]) -> tuple[list[tuple[str, ...]], list[int]]:
    """The distinct subscribed-topic lists (first seen first) and each member's index in them.

    Client-side assignors work per distinct list: at 10,000 members x 1,000 topics, a set
    per member, or a pass over every member's topics, costs seconds.
    """
    index: dict[tuple[str, ...], int] = {}
    which: list[int] = []
    for m in members:
        key = m.subscription.topics
        if type(key) is not tuple:
            key = tuple(key)
        i = index.get(key)
        if i is None:
            i = index[key] = len(index)
        which.append(i)
    return list(index), which


def topic_partitions(mapping: Mapping[str, object]) -> TopicPartitions:
    """Normalise topic -> partitions into the sorted wire shape, dropping empty topics."""
    return tuple(
        (topic, tuple(sorted(mapping[topic])))  # type: ignore[call-overload]
        for topic in sorted(mapping)
        if mapping[topic]
    )
