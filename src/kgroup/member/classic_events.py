"""What goes into and comes out of the classic group member (``classic_member``).

Events carry ``now_ms``; the member answers each with actions, performed by its driver in
order. A member of a consumer group (protocol type ``consumer``) subscribes to topics and
owns partitions; a member of a group of any other protocol type (Kafka Connect's
``connect``, ``kgroup-tasks``, ...) offers opaque metadata with ``SetProtocols``, its leader
is asked to assign with ``RunAssign`` (the driver answers ``AssignmentsComputed``), and it
holds one opaque assignment, handed to it with ``RunOpaqueAssigned`` and taken away with
``RunOpaqueRevoked`` or ``RunOpaqueLost``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.assignors import Assignment
from kgroup.error_codes import ErrorCode
from kgroup.member.actions import (
    CommitOffsets,
    Failed,
    Fatal,
    FindCoordinator,
    RunAssigned,
    RunLost,
    RunRevoked,
)

NO_GENERATION = -1
PROTOCOL_TYPE = "consumer"

# -- events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscribe:
    """The user subscribed to ``topics`` (a pattern is resolved to topics by the driver)."""

    topics: tuple[str, ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    now_ms: int


@dataclass(frozen=True, slots=True)
class Poll:
    """The user polled: resets the max.poll.interval.ms timer."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed; timers due at ``now_ms`` fire."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class CoordinatorFound:
    now_ms: int


@dataclass(frozen=True, slots=True)
class CoordinatorLost:
    """The connection to the coordinator failed outside any request we track."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class MetadataUpdated:
    """Partition counts of topics, as (topic, count) pairs."""

    partitions: tuple[tuple[str, int], ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupAnswered:
    request_id: int
    error: ErrorCode
    now_ms: int
    generation: int = NO_GENERATION
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncGroupAnswered:
    request_id: int
    error: ErrorCode
    now_ms: int
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatAnswered:
    request_id: int
    error: ErrorCode
    now_ms: int


@dataclass(frozen=True, slots=True)
class CommitAnswered:
    """The group-level outcome of an OffsetCommit this member sent (NONE if fine)."""

    error: ErrorCode
    now_ms: int


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A request got no answer (connection lost or timed out)."""

    request_id: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class Close:
    now_ms: int


@dataclass(frozen=True, slots=True)
class SetProtocols:
    """A member of another protocol type offers these (protocol name, metadata) pairs,
    preferred first. The first time it joins with them; later JoinGroups carry them, but
    setting them starts no rebalance by itself (``Rejoin`` does). Empty: leave the group."""

    protocols: tuple[tuple[str, bytes], ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class Rejoin:
    """Start a rebalance now (what the leader must see has changed)."""

    reason: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class AssignmentsComputed:
    """The answer to ``RunAssign`` ``request_id``: an assignment per member id, or the
    ``error`` the assign callback raised."""

    request_id: int
    assignments: tuple[tuple[str, bytes], ...]
    now_ms: int
    error: str | None = None


Event = (Subscribe | Unsubscribe | Poll | Tick | CoordinatorFound | CoordinatorLost
         | MetadataUpdated | JoinGroupAnswered | SyncGroupAnswered | HeartbeatAnswered
         | CommitAnswered | RequestFailed | Close | SetProtocols | Rejoin | AssignmentsComputed)


# -- request actions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendJoinGroup:
    request_id: int
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    reason: str = ""
    protocol_type: str = PROTOCOL_TYPE


@dataclass(frozen=True, slots=True)
class SendSyncGroup:
    request_id: int
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None
    protocol: str | None
    assignments: tuple[tuple[str, bytes], ...]
    protocol_type: str = PROTOCOL_TYPE


@dataclass(frozen=True, slots=True)
class SendHeartbeat:
    request_id: int
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, slots=True)
class SendLeaveGroup:
    group_id: str
    member_id: str
    group_instance_id: str | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RunOnAssignment:
    """Call the chosen assignor's ``on_assignment`` with this member's whole assignment
    (its user data too) before the rebalance listener runs, as Kafka's
    ConsumerPartitionAssignor.onAssignment; only for assignors that have one."""

    protocol: str
    assignment: Assignment
    generation: int


# -- actions of a member of another protocol type ----------------------------------------


@dataclass(frozen=True, slots=True)
class RunAssign:
    """This member leads the group: call the assign callback with every member's metadata
    (for ``protocol``) and answer ``AssignmentsComputed(request_id, ...)``."""

    request_id: int
    generation: int
    protocol: str | None
    members: tuple[JoinedMember, ...]


@dataclass(frozen=True, slots=True)
class RunOpaqueAssigned:
    """Call ``on_assigned``: the leader gave this member ``assignment`` in ``generation``
    (``leader`` is the group leader's member id)."""

    assignment: bytes
    generation: int
    leader: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RunOpaqueRevoked:
    """Call ``on_revoked``: give up the assignment (a rebalance starts, or the member
    leaves); ``generation`` is the one it came from (context, not part of equality)."""

    generation: int = field(default=NO_GENERATION, compare=False)


@dataclass(frozen=True, slots=True)
class RunOpaqueLost:
    """Call ``on_lost``: the assignment may already be someone else's (the member was
    fenced, its generation is gone, or the coordinator went unheard for too long)."""

    generation: int = field(default=NO_GENERATION, compare=False)


Action = (SendJoinGroup | SendSyncGroup | SendHeartbeat | SendLeaveGroup | FindCoordinator
          | CommitOffsets | RunRevoked | RunAssigned | RunLost | Failed | Fatal | RunOnAssignment | RunAssign
          | RunOpaqueAssigned | RunOpaqueRevoked | RunOpaqueLost)
