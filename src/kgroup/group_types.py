"""The kinds of group kgroup serves (Kafka's group types: classic, consumer, share and
streams), and what every tool and view needs to know of each: the one registry of group kinds.

Every place that treats kinds differently reads this module rather than naming a kind: the
coordinator's routing and its kind bindings (core/kinds.py: which groups of a shard are of
which kind, with their module set), ListGroups and DescribeGroups, the group events (their
`protocol` field is a kind's `name`), the broker's load log and group views (the console,
/api and /metrics), the client's `describe_group`, the CLI's group tools (list, describe,
watch, delete, reset-offsets, delete-offsets), the test bed's waits and the lab. A kind is
asked what it *is* (does it move by group epochs? where does its progress live? which API
describes it?), never compared by its name.

Adding a kind: an entry in `GROUP_TYPES` here, its module set in core bound in
core/kinds.py, and whatever a view needs from it as a field below;
tests/integration/test_group_kinds_everywhere.py walks every tool and view with one group of
each kind and fails until the new kind shows everywhere (docs/group-kinds.md says how).

This module is a leaf, like error_codes.py: it imports nothing of kgroup and does no I/O, so
every layer, the pure ones included, may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Positions(Enum):
    """Where a group's progress through its partitions lives."""

    # Committed offsets: OffsetCommit / OffsetFetch / OffsetDelete (and reset by committing).
    OFFSETS = "committed offsets"
    # Share-partition start offsets: DescribeShareGroupOffsets / AlterShareGroupOffsets /
    # DeleteShareGroupOffsets (KIP-932), deleted per whole topic.
    SHARE_STATE = "share-partition start offsets"


class DescribeApi(Enum):
    """The API that describes a group of the kind in full (members with their assignments)."""

    DESCRIBE_GROUPS = "DescribeGroups"
    CONSUMER_GROUP_DESCRIBE = "ConsumerGroupDescribe"
    SHARE_GROUP_DESCRIBE = "ShareGroupDescribe"
    STREAMS_GROUP_DESCRIBE = "StreamsGroupDescribe"


@dataclass(frozen=True, slots=True)
class GroupType:
    """One kind of group, as the tools and views need to know it."""

    # Kafka's GroupType name: ListGroups' and DescribeGroups' type, `kgroup groups list
    # --type`, the `protocol` of the group events, the `kind` of the console and /metrics.
    name: str
    # The states it reports (Kafka's names; a group that is gone is reported "Dead").
    states: tuple[str, ...]
    # Member epochs and a group epoch with a target assignment (KIP-848's modern groups),
    # rather than generations of a JoinGroup/SyncGroup rebalance.
    by_epoch: bool
    describe_api: DescribeApi
    positions: Positions
    # A partition may be assigned to several members at once.
    shares_partitions: bool = False
    # The protocol type ListGroups and DescribeGroups give for it; None: its members' own
    # (a classic group's, as they joined with it).
    protocol_type: str | None = None
    # DescribeGroups describes it (else it answers as for a group that does not exist, as
    # Kafka 4.4 does for every kind but classic: "Group ... is not a classic group").
    in_describe_groups: bool = False

    @property
    def generation_name(self) -> str:
        """What its generation number is called ("generation" or "group epoch")."""
        return "group epoch" if self.by_epoch else "generation"

    def __str__(self) -> str:
        return self.name


CLASSIC = GroupType("classic", ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"),
                    by_epoch=False, describe_api=DescribeApi.DESCRIBE_GROUPS, positions=Positions.OFFSETS,
                    in_describe_groups=True)
CONSUMER = GroupType("consumer", ("Empty", "Assigning", "Reconciling", "Stable"),
                     by_epoch=True, describe_api=DescribeApi.CONSUMER_GROUP_DESCRIBE, positions=Positions.OFFSETS,
                     protocol_type="consumer")
SHARE = GroupType("share", ("Empty", "Stable"),
                  by_epoch=True, describe_api=DescribeApi.SHARE_GROUP_DESCRIBE, positions=Positions.SHARE_STATE,
                  shares_partitions=True, protocol_type="share")
# KIP-1071: Kafka Streams instances sharing an application's tasks; NotReady while the
# topology's topics are missing. Its progress is the committed offsets of its source topics.
STREAMS = GroupType("streams", ("Empty", "NotReady", "Assigning", "Reconciling", "Stable"),
                    by_epoch=True, describe_api=DescribeApi.STREAMS_GROUP_DESCRIBE, positions=Positions.OFFSETS,
                    protocol_type="streams")

# Every kind kgroup serves, in the order views list them.
GROUP_TYPES: tuple[GroupType, ...] = (CLASSIC, CONSUMER, SHARE, STREAMS)

# The state a group that is gone is reported in.
DEAD = "Dead"
STABLE = "Stable"
EMPTY = "Empty"

# Kinds and states Kafka 4.4 knows but kgroup does not serve (yet): the list filters accept
# them, as Kafka's tools do, and match nothing.
OTHER_KAFKA_TYPES: tuple[str, ...] = ()
OTHER_KAFKA_STATES: tuple[str, ...] = ()

_BY_NAME = {t.name: t for t in GROUP_TYPES}


def group_type(name: str | None) -> GroupType | None:
    """The kind called `name` (case-insensitive, as Kafka's filters), or None."""
    return _BY_NAME.get((name or "").lower())


def type_names() -> tuple[str, ...]:
    """Every kind name a `--type` filter takes: the kinds served, then Kafka's others."""
    return tuple(t.name for t in GROUP_TYPES) + OTHER_KAFKA_TYPES


def state_names() -> tuple[str, ...]:
    """Every state a `--state` filter takes, in Kafka's spelling."""
    states = dict.fromkeys(s for t in GROUP_TYPES for s in t.states)
    states[DEAD] = None
    states.update(dict.fromkeys(OTHER_KAFKA_STATES))
    return tuple(states)
