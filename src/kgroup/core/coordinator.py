"""One coordinator shard: the entry point the broker, the lab and the tests drive.

How this works: every request goes to a handler that returns a `Result` (records and
replies) and never touches stored state. The caller appends the records to the shard's log,
calls `replay` on each (the only thing that changes stored state), and sends the replies
once the records are durable. Timers are data: the caller sleeps until `next_deadline()` and
calls `expire(now_ms)`, which runs due operations and returns their records and replies the
same way, one operation per call. Loading after a restart is `replay` over the log followed
by `load_complete`.

Transactions (KIP-98): a transactional id hashes to a shard as a group id does, so the
transaction coordinator is one more handler set here (core/transactions/coordinator.py),
beside the group handlers and with its own records, timers and markers; TxnOffsetCommit and
the end-of-transaction markers for offsets go to txn_offsets.py, next to offsets.py.

Routing: a group id names one kind of group at a time (`GroupKind`, one per kind of the
registry, kgroup/group_types.py, whose groups core/kinds.py binds). This is the one place
that decides, per group API and kind, which handler set answers: classic requests for a
classic group (or none yet) go to classic_protocol.py, ConsumerGroupHeartbeat for a
consumer group (or none yet) to consumer_protocol.py, and a request of one protocol for a
group of the other kind to migration.py. Share groups (KIP-932) are a kind of their own with
their own handler set (share_protocol.py): ShareGroupHeartbeat for a share group (or none
yet) goes there, and any other kind's membership request for a share group, or a share
heartbeat for a group of another kind, is refused (`_refuse`), as Kafka refuses it.
Offsets are refused for a group whose kind keeps its progress elsewhere (a share group's is
its share-partition state). The control API's operations on a group (inspect, rebalance
now, expire a member: group_control.py) are routed by kind the same way, in `operations`.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from functools import partial
import itertools
from typing import Any, Callable

from kgroup.core.admin import Admin
from kgroup.core.classic_group import ClassicGroup
from kgroup.core.classic_protocol import ClassicProtocol
from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import ConsumerGroup
from kgroup.core.consumer_protocol import ConsumerProtocol
from kgroup.core.group_control import ClassicControl, ModernControl, missing_group
from kgroup.core.messages import (
    ConsumerGroupHeartbeatRequest,
    ExpireMemberRequest,
    GroupControlRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kgroup.core.group_configs import AlterGroupConfigsRequest, GroupConfigs, replay_group_config
from kgroup.core.kinds import KINDS
from kgroup.core.migration import Downgrade, Migration
from kgroup.core.modern_group import KIND_OF_RECORD, ModernGroup
from kgroup.core.offsets import Offsets, deleted_topics
from kgroup.core.records import (
    ShareStateRecord,
    ClassicGroupRecord,
    ClassicGroupValue,
    GroupConfigRecord,
    OffsetCommitRecord,
    Record,
    TxnOffsetCommitRecord,
    TxnOffsetMarkerRecord,
    TxnRecord,
)
from kgroup.core.result import EMPTY_RESULT, ReplyTo, Result
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.share_group import ShareGroup
from kgroup.core.share_messages import (
    AlterShareOffsetsRequest,
    DeleteShareOffsetsRequest,
    DescribeShareOffsetsRequest,
    ShareGroupHeartbeatRequest,
    ShareStateKey,
    WriteShareStateRequest,
)
from kgroup.core.share_protocol import ShareProtocol, replay_share_state
from kgroup.core.state import ShardState, StoredState, counter_member_ids, drop_entry
from kgroup.core.streams_control import StreamsControl
from kgroup.core.streams_group import StreamsGroup
from kgroup.core.streams_messages import StreamsGroupHeartbeatRequest, TopologyDescriptionUpdate
from kgroup.core.streams_protocol import StreamsProtocol
from kgroup.core.streams_records import StreamsGroupEpochRecord, StreamsTargetEpochRecord, StreamsTopologyRecord
from kgroup.core.timers import TimerKind, TimerOp
from kgroup.core.transactions import messages as txn
from kgroup.core.transactions.config import TransactionConfig
from kgroup.core.transactions.coordinator import TransactionCoordinator
from kgroup.core.txn_offsets import TxnOffsets
from kgroup.group_types import CLASSIC, CONSUMER, GROUP_TYPES, SHARE, STREAMS, GroupType, Positions

Handler = Callable[..., Result]


def counter_producer_ids(start: int = 1000) -> Callable[[], int]:
    """A deterministic producer-id source for tests and simulations."""
    return itertools.count(start).__next__


class GroupKind(IntEnum):
    """What a group id names in this shard: no group yet, or a group of one kind of the
    registry (`TYPES`). (An IntEnum: routing hashes it on every request, and an int hashes
    in C where a plain Enum member calls Python.)"""

    NONE = 0                 # no group yet
    CLASSIC = 1
    CONSUMER = 2
    SHARE = 3
    STREAMS = 4


# The registry's kind of each GroupKind (every kind of kgroup/group_types.py has one).
TYPES: dict[GroupKind, GroupType] = {GroupKind.CLASSIC: CLASSIC, GroupKind.CONSUMER: CONSUMER,
                                     GroupKind.SHARE: SHARE, GroupKind.STREAMS: STREAMS}
assert tuple(TYPES.values()) == GROUP_TYPES, "a GroupKind for every kind of the registry"

_NONE, _CLASSIC, _CONSUMER, _SHARE = GroupKind.NONE, GroupKind.CLASSIC, GroupKind.CONSUMER, GroupKind.SHARE
_STREAMS = GroupKind.STREAMS
# The modern kinds a classic group of the same id may become (online migration): replaying
# such a group's creation drops the classic one. A share group is never made over a classic
# group (its APIs refuse a classic group's id).
_FROM_CLASSIC = frozenset((ConsumerGroup, StreamsGroup))


class MembershipApi(Enum):
    """The group-membership APIs, routed by the kind of the group they name."""

    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    CONSUMER_GROUP_HEARTBEAT = "ConsumerGroupHeartbeat"
    SHARE_GROUP_HEARTBEAT = "ShareGroupHeartbeat"
    STREAMS_GROUP_HEARTBEAT = "StreamsGroupHeartbeat"


def _refuse(code: ErrorCode, why: str) -> Handler:
    """A handler for a request the group's kind does not take."""
    def refuse(req, reply, now_ms) -> Result:
        raise GroupError(code, f"group {req.group_id} {why}")
    return refuse


def _refuse_as_kafka(code: ErrorCode, why: str) -> Handler:
    """As `_refuse`, with Kafka's message ("Group g is not a streams group.")."""
    def refuse(req, reply, now_ms) -> Result:
        raise GroupError(code, f"Group {req.group_id} {why}.")
    return refuse


class GroupOperation(Enum):
    """The control API's operations on one group, routed by the kind of the group."""

    INSPECT = "inspect"
    REBALANCE = "rebalance"
    EXPIRE_MEMBER = "expire member"


class GroupCoordinatorShard:
    """The groups and offsets of one group-metadata log partition."""

    def __init__(self, config: GroupConfig | None = None,
                 new_member_id: Callable[[str], str] | None = None,
                 txn_config: TransactionConfig | None = None,
                 new_producer_id: Callable[[], int] | None = None) -> None:
        self.shard = shard = ShardState(config or GroupConfig(), new_member_id or counter_member_ids())
        # The group maps of the shard (never replaced), for `kind_of` on every request.
        self._classic_groups = shard.groups
        self._consumer_groups = shard.consumer_groups
        # Groups with pending transactional offsets: every offset replay looks (never replaced).
        self._open_txn_groups = shard.stored.open_txn_groups
        self._share_groups = shard.share_groups
        # Handler sets, each handed the collaborators it uses (their public methods only).
        self.classic = classic = ClassicProtocol(shard)
        self.consumer = consumer = ConsumerProtocol(shard, Downgrade(shard, classic))
        self.migration = migration = Migration(shard, consumer, classic)
        self.offsets = offsets = Offsets(shard)
        self.share = share = ShareProtocol(shard)
        self.streams = streams = StreamsProtocol(shard)
        self._streams_groups = shard.streams_groups
        self.admin = Admin(shard, {CLASSIC: classic.delete_group, CONSUMER: consumer.delete_group,
                                   SHARE: share.delete_group, STREAMS: streams.delete_group})
        self.transactions = transactions = TransactionCoordinator(
            shard, txn_config or TransactionConfig(), new_producer_id or counter_producer_ids())
        self.txn_offsets = txn_offsets = TxnOffsets(shard, offsets)
        self.group_configs = GroupConfigs(shard)
        K, A = GroupKind, MembershipApi
        is_share = _refuse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "is a share group")
        not_share = _refuse(ErrorCode.GROUP_ID_NOT_FOUND, "is not a share group")
        # Streams groups (KIP-1071): the other kinds' requests are refused as Kafka 4.4 refuses
        # them (tests/streams/test_streams_differential.py), except that an empty group of one
        # kind becomes the other; SyncGroup, Heartbeat and LeaveGroup see no classic group.
        is_streams = _refuse_as_kafka(ErrorCode.GROUP_ID_NOT_FOUND, "is not a consumer group")
        not_streams = _refuse_as_kafka(ErrorCode.GROUP_ID_NOT_FOUND, "is not a streams group")
        # API -> group kind -> handler: where every group request goes.
        self.routes: dict[MembershipApi, dict[GroupKind, Handler]] = {
            A.JOIN_GROUP: {K.NONE: classic.join, K.CLASSIC: classic.join, K.CONSUMER: migration.join,
                           K.SHARE: is_share, K.STREAMS: self._join_streams_group},
            A.SYNC_GROUP: {K.NONE: classic.sync, K.CLASSIC: classic.sync, K.CONSUMER: migration.sync,
                           K.SHARE: is_share, K.STREAMS: classic.sync},
            A.HEARTBEAT: {K.NONE: classic.heartbeat, K.CLASSIC: classic.heartbeat, K.CONSUMER: migration.heartbeat,
                          K.SHARE: is_share, K.STREAMS: classic.heartbeat},
            A.LEAVE_GROUP: {K.NONE: classic.leave, K.CLASSIC: classic.leave, K.CONSUMER: migration.leave,
                            K.SHARE: is_share, K.STREAMS: classic.leave},
            A.CONSUMER_GROUP_HEARTBEAT: {K.NONE: consumer.heartbeat, K.CLASSIC: migration.consumer_heartbeat,
                                         K.CONSUMER: consumer.heartbeat, K.SHARE: is_share,
                                         K.STREAMS: is_streams},
            A.SHARE_GROUP_HEARTBEAT: {K.NONE: share.heartbeat, K.SHARE: share.heartbeat,
                                      K.CLASSIC: not_share, K.CONSUMER: not_share, K.STREAMS: not_share},
            A.STREAMS_GROUP_HEARTBEAT: {K.NONE: streams.heartbeat, K.STREAMS: streams.heartbeat,
                                        K.CLASSIC: self._streams_heartbeat_on_classic, K.CONSUMER: not_streams,
                                        K.SHARE: not_streams},
        }
        self._offsets_refused = _refuse(ErrorCode.GROUP_ID_NOT_FOUND,
                                        "is a share group: its progress is its share-partition state")
        # Kinds whose progress is not committed offsets: OffsetCommit/Fetch/Delete refused.
        self._no_offsets = frozenset(k for k, t in TYPES.items() if t.positions is not Positions.OFFSETS)
        self._join = self.routes[A.JOIN_GROUP]
        self._sync = self.routes[A.SYNC_GROUP]
        self._heartbeat = self.routes[A.HEARTBEAT]
        self._leave = self.routes[A.LEAVE_GROUP]
        self._consumer_heartbeat = self.routes[A.CONSUMER_GROUP_HEARTBEAT]
        self._share_heartbeat = self.routes[A.SHARE_GROUP_HEARTBEAT]
        self._streams_heartbeat = self.routes[A.STREAMS_GROUP_HEARTBEAT]
        # A streams group's control is the modern one, with its own inspection (streams_control.py).
        controls = {K.CLASSIC: ClassicControl(shard, classic), K.CONSUMER: ModernControl(shard, consumer),
                    K.SHARE: ModernControl(shard, share), K.STREAMS: StreamsControl(shard, streams)}
        O = GroupOperation
        # Operation -> group kind -> handler: the control API's way in.
        self.operations: dict[GroupOperation, dict[GroupKind, Handler]] = {
            O.INSPECT: {K.NONE: missing_group, **{k: c.inspect for k, c in controls.items()}},
            O.REBALANCE: {K.NONE: missing_group, **{k: c.rebalance for k, c in controls.items()}},
            O.EXPIRE_MEMBER: {K.NONE: missing_group, **{k: c.expire for k, c in controls.items()}},
        }
        # Timer kind -> the handler that runs at expiry.
        self._timer_ops: dict[TimerKind, Callable[[TimerOp, int], Result]] = {
            TimerKind.CONSUMER_SESSION: consumer.session_expired,
            TimerKind.CONSUMER_REVOKE: consumer.revoke_expired,
            TimerKind.CONSUMER_REGEX: consumer.regex_resolved,
            TimerKind.CLASSIC_SESSION: classic.heartbeat_expired,
            TimerKind.CLASSIC_JOIN: classic.join_expired,
            TimerKind.CLASSIC_INITIAL_JOIN: classic.initial_join_expired,
            TimerKind.CLASSIC_SYNC: classic.sync_expired,
            TimerKind.OFFSETS_EXPIRY: lambda op, now: self.offsets.expire(now),
            TimerKind.TXN_TIMEOUT: transactions.timed_out,
            TimerKind.TXN_ID_EXPIRY: transactions.expire_ids,
            TimerKind.SHARE_SESSION: share.session_expired,
            TimerKind.SHARE_INIT: share.topics_initialized,
            TimerKind.STREAMS_SESSION: streams.session_expired,
            TimerKind.STREAMS_REVOKE: streams.revoke_expired,
            TimerKind.STREAMS_INITIAL_DELAY: streams.initial_delay_expired,
        }
        # Record kind -> how it is replayed, for every kind but a plain offset commit (the
        # first branch of `replay`, the hot one). A modern kind's records are found through
        # the kind that registered them (modern_group.KIND_OF_RECORD), so a record a kind adds
        # is replayed without a line here.
        self._replay_of: dict[type, Callable[[Any], None]] = {
            ClassicGroupRecord: self._replay_classic,
            GroupConfigRecord: lambda record: replay_group_config(shard, record),
            ShareStateRecord: lambda record: replay_share_state(shard, record),
            TxnRecord: self._replay_transaction,
            TxnOffsetCommitRecord: txn_offsets.replay_pending,
            TxnOffsetMarkerRecord: txn_offsets.replay_marker,
        }
        modern = {binding.group_class: binding.groups(shard) for binding in KINDS.values()}
        for record_kind, group_class in KIND_OF_RECORD.items():
            self._replay_of[record_kind] = partial(
                self._replay_modern, group_class, modern[group_class], group_class in _FROM_CLASSIC)

    def kind_of(self, group_id: str) -> GroupKind:
        """Which kind of group `group_id` names here (a group id is of one kind at a time)."""
        if group_id in self._classic_groups:
            return _CLASSIC
        if group_id in self._consumer_groups:
            return _CONSUMER
        if group_id in self._share_groups:
            return _SHARE
        if group_id in self._streams_groups:
            return _STREAMS
        return _NONE

    # ---- state ----------------------------------------------------------------------------

    @property
    def stored(self) -> StoredState:
        return self.shard.stored

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.shard.groups

    # ---- requests -------------------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self._join[self.kind_of(req.group_id)](req, reply, now_ms)

    def sync_group(self, req: SyncGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        _require_group_id(req.group_id)
        return self._sync[self.kind_of(req.group_id)](req, reply, now_ms)

    def heartbeat(self, req: HeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        _require_group_id(req.group_id)
        return self._heartbeat[self.kind_of(req.group_id)](req, reply, now_ms)

    def leave_group(self, req: LeaveGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        _require_group_id(req.group_id)
        return self._leave[self.kind_of(req.group_id)](req, reply, now_ms)

    def commit_offsets(self, req: OffsetCommitRequest, reply: ReplyTo, now_ms: int) -> Result:
        if self.kind_of(req.group_id) in self._no_offsets:
            return self._offsets_refused(req, reply, now_ms)
        return self.offsets.commit(req, reply, now_ms)

    def fetch_offsets(self, req: OffsetFetchRequest, reply: ReplyTo, now_ms: int) -> Result:
        if self.kind_of(req.group_id) in self._no_offsets:
            return self._offsets_refused(req, reply, now_ms)
        return self.offsets.fetch(req, reply, now_ms)

    def delete_offsets(self, req: OffsetDeleteRequest, reply: ReplyTo, now_ms: int) -> Result:
        if self.kind_of(req.group_id) in self._no_offsets:
            return self._offsets_refused(req, reply, now_ms)
        return self.offsets.delete(req, reply, now_ms)

    def consumer_group_heartbeat(self, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo,
                                 now_ms: int) -> Result:
        return self._consumer_heartbeat[self.kind_of(req.group_id)](req, reply, now_ms)

    def consumer_group_describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        return self.consumer.describe(group_ids, reply, now_ms)

    def inspect_group(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        """The group as the control API shows it (an InspectedGroup)."""
        return self.operations[GroupOperation.INSPECT][self.kind_of(req.group_id)](req, reply, now_ms)

    def rebalance_group(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Start a rebalance of the group now (group_control.py says how, per kind)."""
        return self.operations[GroupOperation.REBALANCE][self.kind_of(req.group_id)](req, reply, now_ms)

    def expire_member(self, req: ExpireMemberRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Expire a member as its session timeout would; replies with its member id."""
        return self.operations[GroupOperation.EXPIRE_MEMBER][self.kind_of(req.group_id)](req, reply, now_ms)

    def update_topics(self, topics: dict[str, tuple[str, int]], now_ms: int) -> Result:
        """The broker's topics changed (name -> (topic id, partitions)); bump affected groups.
        A topic that is gone, or whose name now belongs to another topic id (deleted and
        created again), takes its committed offsets with it, as Kafka's coordinator deletes
        the offsets of deleted partitions: a new topic of the same name starts with none."""
        before, shard = self.shard.topics, self.shard
        deleted = deleted_topics(before, topics)
        shard.topics_version = max(now_ms, shard.topics_version + 1)
        # The first update (at load) counts as new topics: what changed while this shard
        # was not served is looked at again.
        if shard.new_topics_version < 0 or any(before.get(name, (None,))[0] != meta[0]
                                                for name, meta in topics.items()):
            shard.new_topics_version = shard.topics_version
        gone_ids = frozenset(before[name][0] for name in deleted)
        shard.topics = dict(topics)
        return (self.offsets.topics_deleted(deleted, now_ms) + self.share.topics_deleted(gone_ids, now_ms)
                + self.consumer.topics_changed(now_ms) + self.share.topics_changed(now_ms)
                + self.streams.topics_changed(now_ms))

    # ---- share groups (KIP-932) ---------------------------------------------------------------

    def share_group_heartbeat(self, req: ShareGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self._share_heartbeat[self.kind_of(req.group_id)](req, reply, now_ms)

    def share_group_describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        return self.share.describe(group_ids, reply, now_ms)

    def read_share_state(self, key: ShareStateKey, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.read_state(key, reply, now_ms)

    def write_share_state(self, req: WriteShareStateRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.write_state(req, reply, now_ms)

    def delete_share_state(self, key: ShareStateKey, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.delete_state(key, reply, now_ms)

    def describe_share_offsets(self, req: DescribeShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.describe_offsets(req, reply, now_ms)

    def alter_share_offsets(self, req: AlterShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.alter_offsets(req, reply, now_ms)

    def delete_share_offsets(self, req: DeleteShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.share.delete_offsets(req, reply, now_ms)

    # ---- streams groups (KIP-1071) ---------------------------------------------------------

    def streams_group_heartbeat(self, req: StreamsGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self._streams_heartbeat[self.kind_of(req.group_id)](req, reply, now_ms)

    def streams_group_describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        return self.streams.describe(group_ids, reply, now_ms)

    def streams_topology_description_update(self, req: TopologyDescriptionUpdate, reply: ReplyTo,
                                            now_ms: int) -> Result:
        return self.streams.topology_description_update(req, reply, now_ms)

    @property
    def streams_groups(self) -> dict[str, StreamsGroup]:
        return self.shard.streams_groups

    def _streams_heartbeat_on_classic(self, req: StreamsGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Kafka turns an empty classic group (one with offsets only) into a streams group on a
        join; a classic group with members is not a streams group."""
        group = self.shard.groups[req.group_id]
        if group.members or group.pending_members or req.member_epoch != 0:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group.")
        result = self.streams.heartbeat(req, reply, now_ms)
        if req.group_id in self.shard.stored.classic_groups:
            result = Result((ClassicGroupRecord(req.group_id, None), *result.records), result.replies,
                            result.changes, result.markers, result.events)
        return result

    def _join_streams_group(self, req: JoinGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        """JoinGroup on a streams group: Kafka turns an empty one into a classic group; one
        with members is not a classic group."""
        group = self.shard.streams_groups[req.group_id]
        if group.members:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Group {req.group_id} is a streams group.")
        gone = (StreamsTopologyRecord(req.group_id, None), StreamsTargetEpochRecord(req.group_id, None),
                StreamsGroupEpochRecord(req.group_id, None))
        self.shard.streams_groups.pop(req.group_id)      # the join below sees no group
        try:
            joined = self.classic.join(req, reply, now_ms)
        finally:
            self.shard.streams_groups[req.group_id] = group
        return Result(gone + joined.records, joined.replies, joined.changes, joined.markers, joined.events)

    @property
    def share_groups(self) -> dict[str, ShareGroup]:
        return self.shard.share_groups

    @property
    def consumer_groups(self) -> dict[str, ConsumerGroup]:
        return self.shard.consumer_groups

    def describe_groups(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int,
                        missing_as_error: bool = False) -> Result:
        return self.admin.describe(group_ids, reply, now_ms, missing_as_error)

    def list_groups(self, req: ListGroupsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.admin.list(req, reply, now_ms)

    def delete_groups(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        return self.admin.delete(group_ids, reply, now_ms)

    # ---- transactions ---------------------------------------------------------------------

    def init_producer_id(self, req: txn.InitProducerIdRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.init_producer_id(req, reply, now_ms)

    def add_partitions_to_txn(self, req: txn.AddPartitionsToTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.add_partitions(req, reply, now_ms)

    def add_offsets_to_txn(self, req: txn.AddOffsetsToTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.add_offsets(req, reply, now_ms)

    def end_txn(self, req: txn.EndTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.end_txn(req, reply, now_ms)

    def txn_markers_written(self, req: txn.MarkersWritten, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.markers_written(req, reply, now_ms)

    def verify_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: tuple = (), group_id: str | None = None):
        """KIP-890: may this producer write these partitions (or this group's offsets) now?"""
        return self.transactions.verify(transactional_id, producer_id, producer_epoch, partitions, group_id)

    def describe_transactions(self, ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.describe(ids, reply, now_ms)

    def list_transactions(self, req: txn.ListTransactionsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.transactions.list(req, reply, now_ms)

    def txn_offset_commit(self, req: txn.TxnOffsetCommitRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.txn_offsets.commit(req, reply, now_ms)

    def txn_offsets_marker(self, req: txn.TxnOffsetsMarker, reply: ReplyTo, now_ms: int) -> Result:
        return self.txn_offsets.marker(req, reply, now_ms)

    # ---- group configs --------------------------------------------------------------------

    def alter_group_configs(self, req: AlterGroupConfigsRequest, reply: ReplyTo, now_ms: int) -> Result:
        return self.group_configs.alter(req, reply, now_ms)

    def describe_group_configs(self, group_id: str, reply: ReplyTo, now_ms: int) -> Result:
        return self.group_configs.describe(group_id, reply, now_ms)

    # ---- replay ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """Apply one record to stored state: the only way stored state changes. (A load
        stores a plain offset commit from its bytes, exactly as the first branch here does:
        record_codec.replay_payloads; tests/unit/core/test_replay_payloads.py holds the two
        to the same result, so change them together.)"""
        if type(record) is OffsetCommitRecord:
            if self._open_txn_groups:
                self.txn_offsets.superseded(record)
            offsets = self.shard.stored.offsets
            if record.value is None:
                drop_entry(offsets, record.group_id, (record.topic, record.partition))
            else:
                group_offsets = offsets.get(record.group_id)
                if group_offsets is None:
                    group_offsets = offsets[record.group_id] = {}
                group_offsets[(record.topic, record.partition)] = record.value
        else:
            self._replay_of[type(record)](record)

    def _replay_classic(self, record: ClassicGroupRecord) -> None:
        if record.value is None:
            self.shard.stored.classic_groups.pop(record.group_id, None)
        else:
            self.shard.stored.classic_groups[record.group_id] = record.value

    def _replay_transaction(self, record: TxnRecord) -> None:
        if record.value is None:
            self.shard.stored.transactions.pop(record.transactional_id, None)
        else:
            self.shard.stored.transactions[record.transactional_id] = record.value

    def _replay_modern(self, group_class: type[ModernGroup], groups: dict[str, ModernGroup],
                       from_classic: bool, record: Record) -> None:
        if group_class.apply(groups, record) and from_classic:
            # A group id is of one kind: a new consumer or streams group replaces the classic
            # group it was made from.
            self.shard.groups.pop(record.group_id, None)

    def load_complete(self, now_ms: int) -> Result:
        """Rebuild runtime groups from stored state after a replay, and re-arm timers.

        Members of a loaded group get a full session to show up again, so a coordinator
        restart shorter than the session timeout costs no rebalance.
        """
        out = EMPTY_RESULT
        stored = self.shard.stored
        for group_id in sorted(set(stored.classic_groups) | set(stored.offsets) | set(stored.open_txn_groups)):
            if group_id in self.shard.groups or group_id in self.shard.consumer_groups \
                    or group_id in self.shard.streams_groups:
                continue
            value = stored.classic_groups.get(group_id) or ClassicGroupValue("", 0, None, None, now_ms, ())
            group = ClassicGroup.from_value(group_id, value)
            self.shard.groups[group_id] = group
            out = out + self.classic.group_loaded(group, now_ms)
        self.consumer.loaded(now_ms)
        self.share.loaded(now_ms)
        self.streams.loaded(now_ms)
        self.offsets.schedule_expiry(now_ms)
        return out + self.transactions.loaded(now_ms)

    def snapshot_records(self) -> list[Record]:
        """Records that rebuild the current stored state from nothing (for log snapshots)."""
        stored = self.shard.stored
        records: list[Record] = [ClassicGroupRecord(g, v) for g, v in sorted(stored.classic_groups.items())]
        for _, group in sorted(self.shard.consumer_groups.items()):
            records.extend(group.snapshot())
        records.extend(GroupConfigRecord(g, c) for g, c in sorted(stored.group_configs.items()))
        for _, group in sorted(self.shard.share_groups.items()):
            records.extend(group.snapshot())
        for _, group in sorted(self.shard.streams_groups.items()):
            records.extend(group.snapshot())
        for group_id, states in sorted(stored.share_states.items()):
            records.extend(ShareStateRecord(group_id, t, p, v) for (t, p), v in sorted(states.items()))
        for group_id, offsets in sorted(stored.offsets.items()):
            records.extend(OffsetCommitRecord(group_id, t, p, v) for (t, p), v in sorted(offsets.items()))
        records.extend(self.txn_offsets.snapshot_records())
        records.extend(TxnRecord(t, v) for t, v in sorted(stored.transactions.items()))
        return records

    # ---- timers ---------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When `expire` next has work to do, or None."""
        return self.shard.timers.next_deadline()

    def take_earliest_armed(self) -> int | None:
        """A deadline armed since the last call that may come before the one `next_deadline`
        gave then (None: none did); see Timers.take_earliest_armed."""
        return self.shard.timers.take_earliest_armed()

    def expire(self, now_ms: int) -> Result | None:
        """Run the earliest timer operation due at `now_ms`; None when none is due.

        One operation at a time, so the caller replays its records before the next one
        reads stored state.
        """
        due = self.expire_next(now_ms)
        return None if due is None else due[1]

    def expire_next(self, now_ms: int) -> tuple[TimerOp, Result] | None:
        """As `expire`, with the operation that ran (which group it was for, and why)."""
        due = self.shard.timers.pop_due(now_ms)
        if due is None:
            return None
        _, op = due
        return op, self._timer_ops[op.kind](op, now_ms)


def _require_group_id(group_id: str) -> None:
    """Kafka refuses a classic-protocol request for the empty group id before looking for
    any group: INVALID_GROUP_ID (JoinGroup checks it in check_join)."""
    if not group_id:
        raise GroupError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
