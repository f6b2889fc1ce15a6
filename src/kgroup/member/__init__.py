"""PURE group-member state machines (no I/O, no clock): they take events with ``now_ms``
and return actions. ``classic_member`` speaks JoinGroup/SyncGroup/Heartbeat/LeaveGroup, for
consumer groups and groups of any other protocol type (events in ``classic_events``);
the consumer-protocol member (ConsumerGroupHeartbeat, KIP-848) sits beside it in
``consumer_member`` and the share-group member (ShareGroupHeartbeat, KIP-932) in
``share_member``, all three sharing ``actions`` and the user/timer events (``Subscribe``,
``Tick``, ``Close``), and each answering ``handle(event)`` with a list of actions."""

from kgroup.member.actions import (
    CommitOffsets,
    Failed,
    Fatal,
    FindCoordinator,
    Partitions,
    RunAssigned,
    RunLost,
    RunRevoked,
    TopicPartition,
)
from kgroup.member.classic_events import (
    AssignmentsComputed,
    Close,
    CommitAnswered,
    CoordinatorFound,
    CoordinatorLost,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MetadataUpdated,
    Poll,
    Rejoin,
    RequestFailed,
    RunAssign,
    RunOnAssignment,
    RunOpaqueAssigned,
    RunOpaqueLost,
    RunOpaqueRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SetProtocols,
    Subscribe,
    SyncGroupAnswered,
    Tick,
    Unsubscribe,
)
from kgroup.member.classic_member import ClassicMemberMachine, ClassicState, IllegalMemberTransition
from kgroup.member.config import MemberConfig
from kgroup.member.consumer_member import (
    ConsumerGroupHeartbeatAnswered,
    ConsumerMemberMachine,
    ConsumerState,
    RefreshTopicNames,
    SendConsumerGroupHeartbeat,
    TopicNames,
)

__all__ = [
    "AssignmentsComputed", "Rejoin", "RunAssign", "RunOnAssignment", "RunOpaqueAssigned",
    "RunOpaqueLost", "RunOpaqueRevoked", "SetProtocols",
    "ClassicMemberMachine", "ClassicState", "Close", "CommitOffsets", "CommitAnswered",
    "ConsumerGroupHeartbeatAnswered", "ConsumerMemberMachine", "ConsumerState",
    "RefreshTopicNames", "SendConsumerGroupHeartbeat", "TopicNames",
    "CoordinatorFound", "CoordinatorLost", "Failed", "Fatal", "FindCoordinator", "HeartbeatAnswered",
    "IllegalMemberTransition", "JoinGroupAnswered", "JoinedMember", "MemberConfig",
    "MetadataUpdated", "Partitions", "Poll", "RequestFailed", "RunAssigned", "RunLost",
    "RunRevoked", "SendHeartbeat", "SendJoinGroup", "SendLeaveGroup", "SendSyncGroup",
    "Subscribe", "SyncGroupAnswered", "Tick", "TopicPartition", "Unsubscribe",
]
