"""Requests and responses of the group APIs, as the core sees them.

These are version-independent: the wire layer maps each Kafka request version onto them
(filling defaults for fields an old version lacks) and back. Field names follow Kafka's
schemas so the mapping stays obvious.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.core.errors import ErrorCode
from kgroup.group_types import CLASSIC

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


# ---- JoinGroup ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1  # v0 has none: Kafka uses the session timeout
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 9
    reason: str | None = None

    @property
    def requires_known_member_id(self) -> bool:
        """v4+: a new dynamic member is first handed an id (MEMBER_ID_REQUIRED, KIP-394)."""
        return self.api_version >= 4

    @property
    def supports_skip_assignment(self) -> bool:
        """v9+: a static leader rejoining a Stable group is told to skip assignment."""
        return self.api_version >= 9


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    skip_assignment: bool = False


# ---- SyncGroup ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# ---- Heartbeat ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: ErrorCode


# ---- LeaveGroup ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[LeavingMember, ...]


@dataclass(frozen=True, slots=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()


# ---- Offsets ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    # OffsetCommit v1 per-partition timestamp; v2-v4 retention_time_ms. -1 = broker default.
    commit_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    partitions: tuple[OffsetCommitPartition, ...]
    group_instance_id: str | None = None
    retention_time_ms: int = -1  # v2-v4
    api_version: int = 8


@dataclass(frozen=True, slots=True)
class PartitionError:
    topic: str
    partition: int
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[PartitionError, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    # None asks for every partition the group has an offset for.
    partitions: tuple[tuple[str, int], ...] | None
    require_stable: bool = False
    # v9+: a consumer-protocol member proves it is current (None: not given).
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: ErrorCode
    partitions: tuple[FetchedOffset, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error: ErrorCode
    partitions: tuple[PartitionError, ...] = ()


# ---- Admin --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...] = ()
    error_message: str | None = None   # DescribeGroups v6+: why GROUP_ID_NOT_FOUND


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeletedGroup:
    group_id: str
    error: ErrorCode


# ---- ConsumerGroupHeartbeat (KIP-848) -----------------------------------------------------

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    # None: unchanged since the last heartbeat.
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    # (topic id, partitions) the member owns; None: unchanged.
    owned: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[tuple[str, tuple[int, ...]], ...]
    target_assignment: tuple[tuple[str, tuple[int, ...]], ...]
    # ConsumerGroupDescribe v1 MemberType: 0 a classic member of a migrated group, 1 consumer.
    member_type: int = 1


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode
    state: str = "Dead"
    epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    message: str | None = None


# ---- Control operations (the test bed's control API) --------------------------------------

@dataclass(frozen=True, slots=True)
class GroupControlRequest:
    """Inspect a group, or start a rebalance of it now."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ExpireMemberRequest:
    """Expire a member as if its session had run out; `member` is its id or instance id."""

    group_id: str
    member: str


@dataclass(frozen=True, slots=True)
class InspectedMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    # The consumer protocol's member epoch; None for a member of a classic group.
    member_epoch: int | None
    # (topic name, partitions); None when the assignment is not consumer partitions (a
    # classic group of another protocol type) or not known yet (mid-rebalance).
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None
    pending_revocation: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # The kind of group whose protocol the member speaks (a migrated consumer group has
    # classic members too): a kind's name (kgroup/group_types.py).
    protocol: str = CLASSIC.name


@dataclass(frozen=True, slots=True)
class InspectedGroup:
    """A group as the control API shows it: both kinds in one shape."""

    group_id: str
    kind: str                          # the group's kind's name (kgroup/group_types.py)
    state: str
    protocol_type: str
    protocol: str | None               # classic: the chosen protocol (assignor)
    assignor: str | None               # consumer: the server assignor
    generation: int | None             # classic
    group_epoch: int | None            # consumer
    assignment_epoch: int | None       # consumer
    members: tuple[InspectedMember, ...] = ()
