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
"""

from __future__ import annotations

from kgroup.assignors import Assignment, ConsumerProtocolError, decode_assignment, decode_subscription
from kgroup.assignors import encode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState, ClassicMember
from kgroup.core.consumer_group import ConsumerGroup, MemberState, apply_consumer_record
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.messages import (
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
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberValue,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
    Partitions,
)
from kgroup.core.result import ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import TimerOp

S = ClassicGroupState
CONSUMER = "consumer"


class Migration:
    def __init__(self, shard: ShardState, consumer, classic) -> None:
        self.shard = shard
        self.config = shard.config
        self.consumer = consumer      # ConsumerProtocol
        self.classic = classic        # ClassicProtocol

    # ---- policy ---------------------------------------------------------------------------

    def can_upgrade(self, group: ClassicGroup) -> bool:
        return (self.config.consumer_migration_policy in ("bidirectional", "upgrade")
                and group.protocol_type == CONSUMER
                and len(group.members) < self.config.consumer_max_size)

    def can_downgrade(self) -> bool:
        return self.config.consumer_migration_policy in ("bidirectional", "downgrade")

    # ---- topic names <-> ids --------------------------------------------------------------

    def _ids(self, by_name) -> Partitions:
        topics = self.shard.topics
        return tuple(sorted((topics[t][0], tuple(sorted(ps))) for t, ps in by_name if t in topics and ps))

    def _names(self, by_id: Partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
        names = {tid: name for name, (tid, _) in self.shard.topics.items()}
        return tuple(sorted((names[t], ps) for t, ps in by_id if t in names))

    # ---- upgrade --------------------------------------------------------------------------

    def upgrade(self, classic: ClassicGroup, out: ResultBuilder, now_ms: int) -> ConsumerGroup:
        """Records that turn `classic` into a consumer group; returns that group as replay
        will build it (the caller goes on from there before anything is replayed)."""
        group_id, generation = classic.group_id, classic.generation
        # Parked requests of the classic rebalance must rejoin the new way.
        for parked in list(classic.awaiting_join.values()):
            out.reply(parked, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        for parked in list(classic.awaiting_sync.values()):
            out.reply(parked, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        for key in [("join", group_id), ("sync", group_id)] + [
                ("heartbeat", group_id, m) for m in list(classic.members) + list(classic.pending_members)]:
            self.shard.timers.cancel(key)
        records: list = [ClassicGroupRecord(group_id, None)]
        members = []
        for m in classic.members.values():
            try:
                topics = decode_subscription(m.metadata(classic.protocol)).topics
            except ConsumerProtocolError:
                topics = ()
            try:
                assigned = self._ids(decode_assignment(m.assignment).partitions) if m.assignment else ()
            except ConsumerProtocolError:
                assigned = ()
            meta = ConsumerMemberValue(m.group_instance_id, None, m.client_id, m.client_host, tuple(sorted(topics)),
                                       None, None, m.rebalance_timeout_ms, m.protocols, m.session_timeout_ms)
            members.append((m.member_id, meta, assigned))
        subscribed = tuple(sorted((n, *self.shard.topics[n]) for n in
                                  {t for _, meta, _ in members for t in meta.subscribed_topic_names}
                                  if n in self.shard.topics))
        records.append(ConsumerGroupEpochRecord(group_id, generation, subscribed))
        for member_id, meta, assigned in members:
            records.append(ConsumerMemberRecord(group_id, member_id, meta))
            records.append(ConsumerTargetRecord(group_id, member_id, assigned))
        records.append(ConsumerTargetEpochRecord(group_id, generation))
        for member_id, _, assigned in members:
            records.append(ConsumerCurrentRecord(group_id, member_id, ConsumerCurrentValue(
                generation, generation, MemberState.STABLE.value, assigned, ())))
            self.shard.timers.schedule(("consumer-session", group_id, member_id),
                                       now_ms + classic.members[member_id].session_timeout_ms,
                                       TimerOp("consumer-session", group_id, member_id))
        for record in records:
            out.record(record)
        del self.shard.groups[group_id]
        classic.transition_to(S.DEAD, now_ms)
        scratch: dict[str, ConsumerGroup] = {}
        for record in records[1:]:
            apply_consumer_record(scratch, record)
        return scratch[group_id]

    # ---- downgrade ------------------------------------------------------------------------

    def maybe_downgrade(self, group: ConsumerGroup, leaving: list[str], out: ResultBuilder, now_ms: int) -> bool:
        """After `leaving` go: if only classic members remain, make the group classic again."""
        rest = [m for mid, m in group.members.items() if mid not in leaving]
        if not rest or not self.can_downgrade() or not all(m.meta.is_classic for m in rest):
            return False
        if not any(not group.members[mid].meta.is_classic for mid in leaving if mid in group.members):
            return False  # only the last consumer-protocol member's departure converts back
        group_id, generation = group.group_id, group.epoch + 1
        for m in group.members.values():
            out.record(ConsumerCurrentRecord(group_id, m.member_id, None))
            out.record(ConsumerTargetRecord(group_id, m.member_id, None))
            out.record(ConsumerMemberRecord(group_id, m.member_id, None))
            self.shard.timers.cancel(("consumer-session", group_id, m.member_id))
            self.shard.timers.cancel(("consumer-revoke", group_id, m.member_id))
        out.record(ConsumerTargetEpochRecord(group_id, None))
        out.record(ConsumerGroupEpochRecord(group_id, None))
        protocol = rest[0].meta.classic_protocols[0][0] if rest[0].meta.classic_protocols else "range"
        value = ClassicGroupValue(CONSUMER, generation, protocol, rest[0].member_id, now_ms, tuple(
            ClassicMemberValue(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host,
                               m.meta.rebalance_timeout_ms, m.meta.classic_session_timeout_ms,
                               dict(m.meta.classic_protocols or ()).get(protocol, b""),
                               encode_assignment(Assignment(self._names(m.current.assigned)), 0))
            for m in rest))
        out.record(ClassicGroupRecord(group_id, value))
        classic = ClassicGroup.from_value(group_id, value)
        for m in rest:   # keep every protocol they offered, so the vote works as before
            classic.update(ClassicMember(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host,
                                         m.meta.classic_session_timeout_ms, m.meta.rebalance_timeout_ms,
                                         CONSUMER, m.meta.classic_protocols or (),
                                         classic.members[m.member_id].assignment))
        self.shard.groups[group_id] = classic
        self.classic.group_loaded(classic, now_ms)
        self.classic._prepare_rebalance(classic, out, now_ms)   # everyone rejoins the classic way
        return True

    # ---- classic members inside a consumer group ------------------------------------------

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None):
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

    def join(self, group: ConsumerGroup, req: JoinGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        if req.protocol_type != CONSUMER or not req.protocols:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "a consumer group takes protocol type consumer")
        protocol, metadata = req.protocols[0]
        try:
            sub = decode_subscription(metadata)
        except ConsumerProtocolError as exc:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"unreadable subscription: {exc}") from None
        if req.member_id:
            member = self._classic_member(group, req.member_id, req.group_instance_id)
            epoch = member.epoch
        else:
            epoch = 0
        member_id = req.member_id or self.shard.new_member_id(req.group_instance_id or req.client_id)
        owned = self._ids(sub.owned_partitions)
        hb = ConsumerGroupHeartbeatRequest(
            group_id=group.group_id, member_id=member_id, member_epoch=epoch, instance_id=req.group_instance_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0 else req.session_timeout_ms,
            subscribed_topic_names=tuple(sub.topics), owned=owned, client_id=req.client_id,
            client_host=req.client_host)
        out = ResultBuilder()
        _, _, nxt, _ = self.consumer.step(group, hb, now_ms, out, classic=(req.protocols, req.session_timeout_ms))
        out.reply(reply, JoinGroupResponse(ErrorCode.NONE, nxt.member_epoch, CONSUMER, protocol, "", member_id))
        return out.build()

    def sync(self, group: ConsumerGroup, req: SyncGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        member = self._classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"generation {req.generation_id} is not {member.epoch}")
        protocol = req.protocol_name or (member.meta.classic_protocols or (("range", b""),))[0][0]
        assignment = encode_assignment(Assignment(self._names(member.current.assigned)), 0)
        return Result((), ((reply, SyncGroupResponse(ErrorCode.NONE, CONSUMER, protocol, assignment)),))

    def heartbeat(self, group: ConsumerGroup, req: HeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        member = self._classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"generation {req.generation_id} is not {member.epoch}")
        self.shard.timers.schedule(("consumer-session", group.group_id, member.member_id),
                                   now_ms + member.meta.classic_session_timeout_ms,
                                   TimerOp("consumer-session", group.group_id, member.member_id))
        behind = member.epoch < group.epoch or member.state is not MemberState.STABLE
        error = ErrorCode.REBALANCE_IN_PROGRESS if behind else ErrorCode.NONE
        return Result((), ((reply, HeartbeatResponse(error)),))

    def leave(self, group: ConsumerGroup, req: LeaveGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        out = ResultBuilder()
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
            self.consumer._fence(group, leaving_ids, out, now_ms)
        out.reply(reply, LeaveGroupResponse(ErrorCode.NONE, tuple(results)))
        return out.build()
