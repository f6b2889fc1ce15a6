"""Online migration between classic and consumer groups (KIP-848).

How this works:

- Upgrade: a ConsumerGroupHeartbeat joining a classic group that has members turns it into a
  consumer group in place. Each classic member becomes a consumer-group member at epoch =
  the classic generation, subscribed to the topics of its ConsumerProtocol subscription and
  holding the partitions of its last assignment, both as its current and its target
  assignment; the group epoch and target epoch start at the generation. Nothing moves yet:
  the newcomer's join bumps the epoch and the server assignor takes it from there.
- Classic members inside a consumer group keep speaking JoinGroup / SyncGroup / Heartbeat /
  LeaveGroup. A Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin (the
  group epoch moved past it, or it owes a revocation); its JoinGroup is one reconciliation
  step (what it still reports owning is the truth: a classic member revokes before it
  rejoins) and answers as to a follower (leader ""), so the client sends an empty SyncGroup,
  which answers with the partitions the coordinator assigned it.
- Downgrade: when the last consumer-protocol member leaves and only classic members remain,
  the group becomes a classic group again at generation = the group epoch, with its members
  and their assignments, and goes straight into a rebalance so they rejoin the classic way.

Policy (`consumer_migration_policy`): bidirectional (default), upgrade, downgrade, disabled.

A request either converts a group whole or not at all: the upgrade is built as records
(the consumer group replay will make) plus staged runtime changes (the classic group
retired, its parked replies answered), and the newcomer's own heartbeat runs on the group
those records describe; if any step raises (UNRELEASED_INSTANCE_ID, a full group, ...) the
records and staged changes are dropped with it and the classic group carries on untouched.

`Migration` is what the coordinator routes to when a request's protocol differs from its
group's kind (a ConsumerGroupHeartbeat for a classic group, a classic request for a consumer
group); `Downgrade` is what the consumer protocol calls when members leave. Each gets its
collaborators in its constructor and uses only their public methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroup.assignors import Assignment, ConsumerProtocolError, decode_assignment, decode_subscription
from kgroup.assignors import encode_assignment
from kgroup.assignors.consumer_protocol import ASSIGNMENT_MAX_VERSION
from kgroup.core.assignment_epochs import at_epoch
from kgroup.core.classic_group import ClassicGroup, ClassicGroupMember
from kgroup.core.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState, apply_consumer_record
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.messages import (
    JOIN_EPOCH,
    UNKNOWN_MEMBER_ID,
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeftMember,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.core.records import (
    ClassicGroupRecord,
    ClassicGroupValue,
    ClassicMemberValue,
    ConsumerCurrentValue,
    ConsumerMemberValue,
    Partitions,
)
from kgroup.core.result import Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState

if TYPE_CHECKING:
    from kgroup.core.classic_protocol import ClassicProtocol
    from kgroup.core.consumer_protocol import ConsumerProtocol

CONSUMER = "consumer"


class _TopicIds:
    """Topic names <-> ids, as ConsumerProtocol bytes (names) and consumer groups (ids) need."""

    def __init__(self, shard: ShardState) -> None:
        self.shard = shard

    def ids(self, by_name) -> Partitions:
        topics = self.shard.topics
        return tuple(sorted((topics[t][0], tuple(sorted(ps))) for t, ps in by_name if t in topics and ps))

    def names(self, by_id: Partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
        names = {tid: name for name, (tid, _) in self.shard.topics.items()}
        return tuple(sorted((names[t], ps) for t, ps in by_id if t in names))


# ==========================================================================================
# Downgrade: a consumer group whose last consumer-protocol member left turns classic again
# ==========================================================================================

def protocol_version(metadata: bytes | None) -> int:
    """The ConsumerProtocol version of a subscription (its first int16), within what we
    write; 0 for none. Kafka answers a classic member in that version."""
    if not metadata or len(metadata) < 2:
        return 0
    return max(0, min(int.from_bytes(metadata[:2], "big", signed=True), ASSIGNMENT_MAX_VERSION))


class Downgrade:
    def __init__(self, shard: ShardState, classic: ClassicProtocol) -> None:
        self.shard = shard
        self.config = shard.config
        self.classic = classic
        self.topics = _TopicIds(shard)

    def allowed(self) -> bool:
        return self.config.consumer_migration_policy in ("bidirectional", "downgrade")

    def wanted(self, group: ConsumerGroup, leaving: list[str]) -> bool:
        """Whether the group turns classic once `leaving` go: only classic members remain
        (and the policy allows it)."""
        rest = [m for mid, m in group.members.items() if mid not in leaving]
        if not rest or not self.allowed() or not all(m.meta.is_classic for m in rest):
            return False
        # Only the last consumer-protocol member's departure converts back.
        return any(not group.members[mid].meta.is_classic for mid in leaving if mid in group.members)

    def to_classic(self, group: ConsumerGroup, leaving: list[str], out: ResultBuilder, now_ms: int) -> None:
        """The classic group that takes the place of `group` once `leaving` go: its record,
        and the group staged to be adopted. The consumer group's own records are deleted by
        the consumer protocol, as for any group that goes."""
        rest = [m for mid, m in group.members.items() if mid not in leaving]
        # Kafka's ClassicGroup.fromConsumerGroup: the generation is the group epoch, and each
        # member's assignment its target one, in its subscription's ConsumerProtocol version.
        group_id, generation = group.group_id, group.epoch
        protocol = rest[0].meta.classic_protocols[0][0] if rest[0].meta.classic_protocols else "range"
        value = ClassicGroupValue(CONSUMER, generation, protocol, rest[0].member_id, now_ms, tuple(
            ClassicMemberValue(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host,
                               m.meta.rebalance_timeout_ms, m.meta.classic_session_timeout_ms,
                               dict(m.meta.classic_protocols or ()).get(protocol, b""),
                               encode_assignment(Assignment(self.topics.names(group.target.get(m.member_id, ()))),
                                                 protocol_version(dict(m.meta.classic_protocols or ()).get(protocol))))
            for m in rest))
        out.record(ClassicGroupRecord(group_id, value))
        classic = ClassicGroup.from_value(group_id, value)
        for m in rest:   # keep every protocol they offered, so the vote works as before
            classic.update(ClassicGroupMember(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host,
                                              m.meta.classic_session_timeout_ms, m.meta.rebalance_timeout_ms,
                                              CONSUMER, m.meta.classic_protocols or (),
                                              classic.members[m.member_id].assignment))
        # Everyone rejoins the classic way once the group is in.
        out.then(self.classic.adopt, classic, out, now_ms)


# ==========================================================================================
# Migration: requests of one protocol for a group of the other kind
# ==========================================================================================

class Migration:
    def __init__(self, shard: ShardState, consumer: ConsumerProtocol, classic: ClassicProtocol) -> None:
        self.shard = shard
        self.config = shard.config
        self.consumer = consumer
        self.classic = classic
        self.topics = _TopicIds(shard)

    # ---- a ConsumerGroupHeartbeat for a classic group -------------------------------------

    def can_upgrade(self, group: ClassicGroup) -> bool:
        return (self.config.consumer_migration_policy in ("bidirectional", "upgrade")
                and group.protocol_type == CONSUMER
                and len(group.members) < self.config.consumer_max_size)

    def consumer_heartbeat(self, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """A ConsumerGroupHeartbeat for a classic group: convert it (as records) and go on as
        the consumer protocol would; nothing happens unless the whole request succeeds."""
        self.consumer.validate(req)
        classic = self.shard.groups[req.group_id]
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        group = None
        if classic.members or classic.pending_members:
            if req.member_epoch != JOIN_EPOCH or not self.can_upgrade(classic):
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"group {req.group_id} is not a consumer group (a classic group "
                                 f"with members; migration policy {self.config.consumer_migration_policy})")
            # Online upgrade: the classic members carry on inside a consumer group.
            group = self._upgrade(classic, out, now_ms)
        elif req.member_epoch == JOIN_EPOCH and req.group_id in self.shard.stored.classic_groups:
            # An empty classic group becomes a consumer group (its offsets stay).
            out.record(ClassicGroupRecord(req.group_id, None))
        return self.consumer.heartbeat_in(group, req, reply, now_ms, out)

    def _upgrade(self, classic: ClassicGroup, out: ResultBuilder, now_ms: int) -> ConsumerGroup:
        """Records that turn `classic` into a consumer group, and the classic group's
        retirement staged on `out`; returns the group as replay will build it (the caller
        goes on from there before anything is replayed)."""
        group_id, generation = classic.group_id, classic.generation
        # Parked requests of the classic rebalance must rejoin the new way.
        for parked in list(classic.awaiting_join.values()):
            out.reply(parked, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        for parked in list(classic.awaiting_sync.values()):
            out.reply(parked, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        out.then(self.classic.retire, classic, now_ms)
        records: list = [ClassicGroupRecord(group_id, None)]
        members = []
        for m in classic.members.values():
            try:
                topics = decode_subscription(m.metadata(classic.protocol)).topics
            except ConsumerProtocolError:
                topics = ()
            try:
                assigned = self.topics.ids(decode_assignment(m.assignment).partitions) if m.assignment else ()
            except ConsumerProtocolError:
                assigned = ()
            meta = ConsumerMemberValue(m.group_instance_id, None, m.client_id, m.client_host, tuple(sorted(topics)),
                                       None, None, m.rebalance_timeout_ms, m.protocols, m.session_timeout_ms)
            members.append((m.member_id, meta, assigned))
        subscribed = tuple(sorted((n, *self.shard.topics[n]) for n in
                                  {t for _, meta, _ in members for t in meta.subscribed_topic_names}
                                  if n in self.shard.topics))
        # The consumer group's records by role, as the consumer protocol writes them.
        kind = self.consumer.records
        records.append(kind.epoch(group_id, generation, subscribed))
        for member_id, meta, assigned in members:
            records.append(kind.member(group_id, member_id, meta))
            records.append(kind.target(group_id, member_id, assigned))
        records.append(kind.target_epoch(group_id, generation))
        for member_id, _, assigned in members:
            records.append(kind.current(group_id, member_id, at_epoch(ConsumerCurrentValue(
                generation, generation, MemberState.STABLE, assigned, ()), generation)))
            self.consumer.arm_session(group_id, member_id, now_ms + classic.members[member_id].session_timeout_ms, out)
        for record in records:
            out.record(record)
        scratch: dict[str, ConsumerGroup] = {}
        for record in records[1:]:
            apply_consumer_record(scratch, record)
        return scratch[group_id]

    # ---- classic requests for a consumer group --------------------------------------------

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is not None:
            static = group.static_member(instance_id)
            if static is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown group instance id {instance_id}")
            if static.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is owned by {static.member_id}")
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group.group_id}")
        return member

    def _group(self, group_id: str) -> ConsumerGroup:
        return self.shard.consumer_groups[group_id]

    def join(self, req: JoinGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        self.classic.check_join(req)
        group = self._group(req.group_id)
        if req.protocol_type != CONSUMER or not req.protocols:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "a consumer group takes protocol type consumer")
        protocol, metadata = req.protocols[0]
        try:
            sub = decode_subscription(metadata)
        except ConsumerProtocolError as exc:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"unreadable subscription: {exc}") from None
        # As Kafka 4.4 joins a classic member to a consumer group: a dynamic member without
        # an id is handed one (v4+, KIP-394) and nothing is recorded until it comes back with
        # it; a dynamic member with an id the group does not know joins with that id.
        if req.member_id and (req.group_instance_id is not None or req.member_id in group.members):
            member = self._classic_member(group, req.member_id, req.group_instance_id)
            epoch = member.epoch
        else:
            epoch = 0
        member_id = req.member_id or self.shard.new_member_id(req.group_instance_id or req.client_id)
        if not req.member_id and req.group_instance_id is None and req.requires_known_member_id:
            out = ResultBuilder(EventJournal(self.shard, now_ms))
            out.reply(reply, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
            return out.build()
        owned = self.topics.ids(sub.owned_partitions)
        hb = ConsumerGroupHeartbeatRequest(
            group_id=group.group_id, member_id=member_id, member_epoch=epoch, instance_id=req.group_instance_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0 else req.session_timeout_ms,
            subscribed_topic_names=tuple(sub.topics), owned=owned, client_id=req.client_id,
            client_host=req.client_host)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "JoinGroup", Departure.FENCED)
        done = self.consumer.step(group, hb, now_ms, out, classic=(req.protocols, req.session_timeout_ms))
        out.reply(reply, JoinGroupResponse(ErrorCode.NONE, done.after.member_epoch, CONSUMER, protocol, "", member_id))
        return out.build()

    def sync(self, req: SyncGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        member = self._classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"generation {req.generation_id} is not {member.epoch}")
        first = (member.meta.classic_protocols or (("range", b""),))[0]
        protocol = req.protocol_name or first[0]
        # In the version of the member's first protocol's subscription, as Kafka answers.
        assignment = encode_assignment(Assignment(self.topics.names(member.current.assigned)),
                                       protocol_version(first[1]))
        return Result((), ((reply, SyncGroupResponse(ErrorCode.NONE, CONSUMER, protocol, assignment)),))

    def heartbeat(self, req: HeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        member = self._classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"generation {req.generation_id} is not {member.epoch}")
        out = ResultBuilder()
        self.consumer.arm_session(group.group_id, member.member_id, now_ms + member.meta.classic_session_timeout_ms, out)
        behind = member.epoch < group.epoch or member.state is not MemberState.STABLE
        out.reply(reply, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS if behind else ErrorCode.NONE))
        return out.build()

    def leave(self, req: LeaveGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "LeaveGroup")
        results, leaving_ids = [], []
        for leaving in req.members:
            try:
                if leaving.member_id == UNKNOWN_MEMBER_ID:
                    member = group.static_member(leaving.group_instance_id)
                    if member is None:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    member = self._classic_member(group, leaving.member_id, leaving.group_instance_id)
            except GroupError as exc:
                results.append(LeftMember(leaving.member_id, leaving.group_instance_id, exc.code))
                continue
            leaving_ids.append(member.member_id)
            results.append(LeftMember(leaving.member_id, leaving.group_instance_id, ErrorCode.NONE))
        if leaving_ids:
            self.consumer.fence(group, leaving_ids, out, now_ms)
        out.reply(reply, LeaveGroupResponse(ErrorCode.NONE, tuple(results)))
        return out.build()
