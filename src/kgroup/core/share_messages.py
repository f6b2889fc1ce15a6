"""Requests and responses of the share-group APIs (KIP-932) as the core sees them.

Version-independent, as messages.py: the wire layer maps Kafka's fields onto them. Topics
are named by topic id (a string), as the share APIs name them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.core.errors import ErrorCode
from kgroup.core.records import Partitions, ShareStateValue

SHARE_JOIN_EPOCH = 0
SHARE_LEAVE_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    # None: unchanged since the last heartbeat.
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatResponse:
    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    # None: unchanged since the last answer.
    assignment: Partitions | None = None


@dataclass(frozen=True, slots=True)
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Partitions


@dataclass(frozen=True, slots=True)
class DescribedShareGroup:
    group_id: str
    error: ErrorCode
    state: str = "Dead"
    epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedShareMember, ...] = ()


# ---- share-partition state (what Kafka's share coordinator keeps) -------------------------

@dataclass(frozen=True, slots=True)
class WriteShareStateRequest:
    """Persist the state of one share partition; refused with FENCED_STATE_EPOCH when its
    state epoch is not the stored one (the state was reset meanwhile), and with
    FENCED_LEADER_EPOCH when `leader_epoch` is older than the stored one (a partition leader
    that another node has replaced; -1: the writer names none, nothing to check)."""

    group_id: str
    topic_id: str
    partition: int
    value: ShareStateValue
    # InitializeShareGroupState (from a partition leader on another node): the state is
    # replaced if its state epoch is newer than the stored one, else FENCED_STATE_EPOCH.
    initialize: bool = False
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    group_id: str
    topic_id: str
    partition: int


# ---- DescribeShareGroupOffsets / AlterShareGroupOffsets / DeleteShareGroupOffsets ---------

@dataclass(frozen=True, slots=True)
class ShareOffset:
    """A share partition's start offset (-1: no state yet), and per-partition error."""

    topic_id: str
    partition: int
    start_offset: int = -1
    error: ErrorCode = ErrorCode.NONE
    # Offsets at or past the start already acknowledged or archived, as persisted (KIP-1226's
    # deliveryCompleteCount): the lag is the log's end minus the start minus these.
    delivery_complete: int = 0
    # Initialized by the group (a topic it subscribed to), even with no start offset yet:
    # Kafka then answers leader epoch 0 rather than -1.
    initialized: bool = False


@dataclass(frozen=True, slots=True)
class DescribeShareOffsetsRequest:
    group_id: str
    # ((topic id, partition), ...); None: every partition the group has state for.
    partitions: tuple[tuple[str, int], ...] | None


@dataclass(frozen=True, slots=True)
class AlterShareOffsetsRequest:
    group_id: str
    offsets: tuple[tuple[str, int, int], ...]    # (topic id, partition, start offset)


@dataclass(frozen=True, slots=True)
class DeleteShareOffsetsRequest:
    group_id: str
    topic_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareOffsetsResponse:
    error: ErrorCode
    offsets: tuple[ShareOffset, ...] = ()
