"""Actions a member state machine asks its driver to perform, in the order given.

Shared by every member protocol: finding the coordinator, running the user's rebalance
callbacks, committing positions before a revocation, and giving up. The classic protocol's
request actions (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) live in ``classic_member``;
a consumer-protocol member adds its own request action beside them.

A partition is a ``(topic, partition)`` tuple; sets of them are frozensets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.error_codes import ErrorCode

TopicPartition = tuple[str, int]
Partitions = frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class FindCoordinator:
    """Discover the group coordinator (with backoff), then send ``CoordinatorFound``."""


@dataclass(frozen=True, slots=True)
class CommitOffsets:
    """Synchronously commit the consumed positions of ``partitions`` (auto-commit), with
    the generation and member id that own them (the member may move on right after)."""

    partitions: Partitions
    generation: int = -1
    member_id: str = ""


@dataclass(frozen=True, slots=True)
class RunRevoked:
    """Call the listener's ``on_partitions_revoked``; stop consuming these first.

    ``generation`` and ``member_id`` are those that owned the partitions: a listener may
    commit with them (as Kafka's onPartitionsRevoked may) although the member has already
    moved on to rejoining or leaving. They are context, not part of what the action is, so
    they take no part in equality.
    """

    partitions: Partitions
    generation: int = field(default=-1, compare=False)
    member_id: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class RunAssigned:
    """Call the listener's ``on_partitions_assigned``; start consuming these."""

    partitions: Partitions


@dataclass(frozen=True, slots=True)
class RunLost:
    """Call the listener's ``on_partitions_lost``; these are already someone else's."""

    partitions: Partitions


@dataclass(frozen=True, slots=True)
class Failed:
    """A rebalance failed with an error the member does not expect; it rejoins by itself.
    Raise ``error`` to the user once (Kafka's consumer raises it from one ``poll()`` and
    rejoins on the next)."""

    error: ErrorCode
    message: str = ""


@dataclass(frozen=True, slots=True)
class Fatal:
    """The member cannot continue (e.g. FENCED_INSTANCE_ID); raise ``error`` to the user."""

    error: ErrorCode
    message: str = ""
