"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and timers.

How this works: a member joins; the first join to an Empty group starts an initial delay
(group.initial.rebalance.delay.ms, extended by each newcomer but never past the rebalance
timeout) so a starting fleet lands in one generation. Otherwise the join phase ends when
every known member has rejoined and no pending member is outstanding, or when the rebalance
timeout fires. At that point dynamic members that did not rejoin are dropped, static ones
kept, the generation advances, the protocol is voted, and every parked JoinGroup gets its
answer (the leader's with the member list). The leader's SyncGroup carries the assignment,
which is persisted as a group record and handed to every parked SyncGroup: the group is
Stable. Any member change (join with new metadata, leader rejoin, leave, session expiry, a
member that never syncs) sends the group back to PreparingRebalance.

Replies to parked requests are returned in `Result.replies` against the reply token the
request brought; immediate failures raise GroupError before anything changes. These
handlers see classic groups only: the coordinator routes a classic request for a consumer
group to migration.py, which may hand a group back here (`adopt`) or take one away
(`retire`) through the public methods at the end.
Behaviour follows Apache Kafka's GroupMetadataManager; comments note where we choose.
"""

from __future__ import annotations

from dataclasses import replace

from kgroup.core.classic_group import ClassicGroup, ClassicGroupState, ClassicGroupMember
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.messages import (
    UNKNOWN_MEMBER_ID,
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
from kgroup.core.records import ClassicGroupRecord, OffsetCommitRecord
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import (
    TimerKind,
    TimerOp,
    classic_join_key,
    classic_session_key,
    classic_sync_key,
)

S = ClassicGroupState

HEARTBEAT_OK = HeartbeatResponse(ErrorCode.NONE)
HEARTBEAT_REBALANCING = HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS)

# Kafka's classicGroupNewMemberJoinTimeoutMs: a brand-new member parked in a long rebalance
# cannot heartbeat, so it is given this long before it is presumed gone (it will retry).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class ClassicProtocol:
    """Handlers of the classic group APIs over one shard's state."""

    def __init__(self, shard: ShardState) -> None:
        self.shard = shard
        self.config = shard.config
        self.timers = shard.timers

    # ======================================================================================
    # JoinGroup
    # ======================================================================================

    def check_join(self, req: JoinGroupRequest) -> None:
        """Request-level validation of a JoinGroup, whatever kind of group it is for."""
        cfg = self.config
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            raise GroupError(
                ErrorCode.INVALID_SESSION_TIMEOUT,
                f"session timeout {req.session_timeout_ms} ms is outside "
                f"[{cfg.min_session_timeout_ms}, {cfg.max_session_timeout_ms}]",
            )

    def join(self, req: JoinGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle JoinGroup; the reply may be parked until the join phase completes."""
        # 1. Request-level validation, before anything changes.
        self.check_join(req)
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self.shard.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {req.group_id} does not exist")
            group = ClassicGroup(req.group_id, now_ms)
        elif group.is_in(S.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"group {req.group_id} is being removed")
        if not group.supports_protocols(req.protocol_type, tuple(n for n, _ in req.protocols)):
            raise GroupError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"protocol type {req.protocol_type!r} / protocols {[n for n, _ in req.protocols]} "
                f"do not match group {req.group_id}",
            )
        # 2. The group now exists in memory (a failed join above left nothing behind).
        self.shard.groups.setdefault(req.group_id, group)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        # The only member a JoinGroup removes is one past group.max.size.
        out.changed(group.group_id, "JoinGroup", Departure.FENCED, group=group)
        # 3. group.max.size: members past the limit lose (KIP-389).
        if not self._accept_joining_member(group, req.member_id):
            self._remove_member(group, req.member_id, out)
            out.reply(reply, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=UNKNOWN_MEMBER_ID))
            if group.is_in(S.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group, out, now_ms)
            return out.build()
        if is_unknown:
            self._join_new_member(group, req, reply, out, now_ms)
        else:
            self._join_existing_member(group, req, reply, out, now_ms)
        return out.build()

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            # Counting parked joins (not members) both tolerates a lowered limit and makes
            # the last members to rejoin the ones that lose.
            return member_id in group.awaiting_join or len(group.awaiting_join) < limit
        return group.has_member(member_id) or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, req: JoinGroupRequest, reply: ReplyTo,
                         out: ResultBuilder, now_ms: int) -> None:
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_id = self.shard.new_member_id(prefix)
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is not None:
                self._replace_static_member(group, req, existing, new_id, reply, out, now_ms)
            else:
                self._add_member_and_rebalance(group, req, new_id, reply, out, now_ms)
        elif req.requires_known_member_id:
            # Two-step join (KIP-394): hand out the id; the member holds the join phase open
            # as "pending" until it comes back with it or its session times out.
            group.pending_members[new_id] = None
            self.timers.schedule(
                classic_session_key(group.group_id, new_id), now_ms + req.session_timeout_ms,
                TimerOp(TimerKind.CLASSIC_SESSION, group.group_id, new_id),
            )
            out.reply(reply, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, reply, out, now_ms)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroupRequest, reply: ReplyTo,
                              out: ResultBuilder, now_ms: int) -> None:
        member_id = req.member_id
        if group.is_pending(member_id):
            if req.group_instance_id is not None:
                raise GroupError(ErrorCode.INVALID_REQUEST, "a pending member cannot be static")
            self._add_member_and_rebalance(group, req, member_id, reply, out, now_ms)
            return
        group.validate_member(member_id, req.group_instance_id)
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, reply, out, now_ms)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # Same metadata: it probably lost our JoinGroup response. Resend it.
                out.reply(reply, self._join_response(group, member_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, req, reply, out, now_ms)
        elif group.is_in(S.STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # A leader rejoin forces a rebalance: it is how a leader reacts to changes
                # (topic metadata) that do not show in member metadata.
                self._update_member_and_rebalance(group, member, req, reply, out, now_ms)
            else:
                out.reply(reply, self._join_response(group, member_id, with_members=False))
        else:
            out.reply(reply, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _new_member(self, req: JoinGroupRequest, member_id: str) -> ClassicGroupMember:
        return ClassicGroupMember(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0
                                  else req.session_timeout_ms),
            protocol_type=req.protocol_type,
            protocols=req.protocols,
        )

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinGroupRequest, member_id: str,
                                  reply: ReplyTo, out: ResultBuilder, now_ms: int) -> None:
        member = self._new_member(req, member_id)
        if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True
        group.add(member, reply)
        out.member_joined(group, member)
        group.new_members[member_id] = None
        self.timers.schedule(
            classic_session_key(group.group_id, member_id), now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
            TimerOp(TimerKind.CLASSIC_SESSION, group.group_id, member_id),
        )
        self._maybe_prepare_rebalance_or_complete_join(group, out, now_ms)

    def _update_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember,
                                     req: JoinGroupRequest, reply: ReplyTo, out: ResultBuilder,
                                     now_ms: int) -> None:
        self._update_member(group, member, req, reply)
        self._maybe_prepare_rebalance_or_complete_join(group, out, now_ms)

    def _update_member(self, group: ClassicGroup, member: ClassicGroupMember, req: JoinGroupRequest,
                       reply: ReplyTo | None) -> ClassicGroupMember:
        updated = replace(
            member,
            protocols=req.protocols,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0
                                  else req.session_timeout_ms),
        )
        # A member keeps the client id and host it first joined with, as in Kafka (whose
        # updateMember changes protocols and timeouts only) — also a static member that a
        # restarted instance replaced.
        group.update(updated)
        if reply is not None:
            # A retried JoinGroup replaces the parked one; like Kafka we drop the older
            # reply (its client has given up on it) rather than answer a stale request.
            group.awaiting_join[member.member_id] = reply
        return updated

    def _replace_static_member(self, group: ClassicGroup, req: JoinGroupRequest, old_id: str,
                               new_id: str, reply: ReplyTo, out: ResultBuilder, now_ms: int) -> None:
        """A known instance id joined with no member id: a restart, or a duplicate."""
        previous_leader = group.leader
        # The old incarnation is fenced at once if it still waits on a reply.
        old_join = group.awaiting_join.pop(old_id, None)
        if old_join is not None:
            out.reply(old_join, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        old_sync = group.awaiting_sync.pop(old_id, None)
        if old_sync is not None:
            out.reply(old_sync, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
        self.timers.cancel(classic_session_key(group.group_id, old_id))
        old = group.members[old_id]
        member = group.replace_static(old_id, new_id)
        out.member_joined(group, member, old)
        self._schedule_heartbeat(group, member, now_ms)
        member = self._update_member(group, member, req, reply)

        if group.is_in(S.STABLE):
            if group.protocol == group.select_protocol():
                # Same protocol for the next generation: persist the new member id and
                # answer at once; no rebalance (KIP-345).
                group.awaiting_join.pop(new_id, None)
                out.record(ClassicGroupRecord(group.group_id, group.to_value(now_ms)))
                if req.supports_skip_assignment:
                    is_leader = group.is_leader(new_id)
                    out.reply(reply, self._join_response(group, new_id, with_members=is_leader,
                                                         skip_assignment=is_leader))
                else:
                    # Before v9 a static leader must not recompute the assignment, so it is
                    # told the old leader id and behaves as a follower.
                    out.reply(reply, replace(self._join_response(group, new_id, with_members=False),
                                             leader=previous_leader or ""))
            else:
                self._maybe_prepare_rebalance_or_complete_join(group, out, now_ms)
        elif group.is_in(S.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id; start over.
            self._prepare_rebalance(group, out, now_ms)
        else:  # PREPARING_REBALANCE
            self._maybe_complete_join_phase(group, out, now_ms)

    def _join_response(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                       skip_assignment: bool = False) -> JoinGroupResponse:
        return JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol,
            leader=group.leader or "",
            member_id=member_id,
            members=group.join_members() if with_members else (),
            skip_assignment=skip_assignment,
        )

    # ======================================================================================
    # Rebalance phases
    # ======================================================================================

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, out: ResultBuilder,
                                                  now_ms: int) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, out, now_ms)
        else:
            self._maybe_complete_join_phase(group, out, now_ms)

    def _prepare_rebalance(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            # Members waiting for an assignment of a generation that will never be
            # completed must rejoin.
            self._reset_assignment_and_fail_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS, out, now_ms)
        self.timers.cancel(classic_sync_key(group.group_id))
        initial = group.is_in(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE, now_ms)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(
                classic_join_key(group.group_id), now_ms + delay,
                TimerOp(TimerKind.CLASSIC_INITIAL_JOIN, group.group_id, delay_ms=delay, remaining_ms=remaining),
            )
            return
        if group.all_joined():
            self._complete_join(group, out, now_ms)
        else:
            self.timers.schedule(classic_join_key(group.group_id), now_ms + group.rebalance_timeout_ms(),
                                 TimerOp(TimerKind.CLASSIC_JOIN, group.group_id))

    def _maybe_complete_join_phase(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        # The initial rebalance always waits out its delay, even when everyone is in.
        if (group.is_in(S.PREPARING_REBALANCE) and group.all_joined()
                and group.previous_state is not S.EMPTY):
            self._complete_join(group, out, now_ms)

    def initial_join_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.groups.get(op.group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return EMPTY_RESULT
        if group.new_member_added and op.remaining_ms > 0:
            # Someone joined during the delay: wait once more, within the budget.
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, op.remaining_ms)
            remaining = max(op.remaining_ms - op.delay_ms, 0)
            self.timers.schedule(
                classic_join_key(group.group_id), now_ms + delay,
                TimerOp(TimerKind.CLASSIC_INITIAL_JOIN, group.group_id, delay_ms=delay, remaining_ms=remaining),
            )
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "initial rebalance delay", Departure.EXPIRED, group=group)
        self._complete_join(group, out, now_ms)
        return out.build()

    def join_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.groups.get(op.group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "rebalance timeout", Departure.EXPIRED, group=group)
        self._complete_join(group, out, now_ms)
        return out.build()

    def _complete_join(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        self.timers.cancel(classic_join_key(group.group_id))
        # 1. Dynamic members that did not rejoin are gone; static members keep their place.
        for member in group.not_yet_rejoined():
            if not member.is_static:
                self.timers.cancel(classic_session_key(group.group_id, member.member_id))
                out.member_gone(group, member)
                group.remove(member.member_id)
        # 2. A leader that did not rejoin hands over to the first member that did. If nobody
        #    rejoined (only absent static members are left) wait another rebalance timeout.
        if group.members and not self._elect_joined_leader(group):
            self.timers.schedule(classic_join_key(group.group_id), now_ms + group.rebalance_timeout_ms(),
                                 TimerOp(TimerKind.CLASSIC_JOIN, group.group_id))
            return
        # 3. Next generation.
        group.generation += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol = None
            group.transition_to(S.EMPTY, now_ms)
            out.record(ClassicGroupRecord(group.group_id, group.to_value(now_ms)))
            return
        group.protocol = group.select_protocol()
        group.transition_to(S.COMPLETING_REBALANCE, now_ms)
        # 4. Answer every parked join; the leader gets the member list.
        for member_id, member in group.members.items():
            parked = group.awaiting_join.pop(member_id, None)
            out.reply(parked, self._join_response(group, member_id, with_members=group.is_leader(member_id)))
            group.new_members.pop(member_id, None)
            self._schedule_heartbeat(group, member, now_ms)
            group.pending_sync[member_id] = None
        # 5. Members that never send SyncGroup are removed after the rebalance timeout.
        self.timers.schedule(classic_sync_key(group.group_id), now_ms + group.rebalance_timeout_ms(),
                             TimerOp(TimerKind.CLASSIC_SYNC, group.group_id, generation=group.generation))

    def _elect_joined_leader(self, group: ClassicGroup) -> bool:
        if group.leader is None:
            return False
        if group.leader in group.awaiting_join:
            return True
        for member_id in group.members:
            if member_id in group.awaiting_join:
                group.leader = member_id
                return True
        return False

    def sync_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.groups.get(op.group_id)
        if (group is None or op.generation != group.generation
                or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync):
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "sync timeout", Departure.EXPIRED, group=group)
        for member_id in list(group.pending_sync):
            self._remove_member(group, member_id, out)
        self._prepare_rebalance(group, out, now_ms)
        return out.build()

    def _reset_assignment_and_fail_syncs(self, group: ClassicGroup, error: ErrorCode,
                                         out: ResultBuilder, now_ms: int) -> None:
        for member_id, member in list(group.members.items()):
            if member.assignment:
                group.members[member_id] = replace(member, assignment=b"")
        for member_id, parked in list(group.awaiting_sync.items()):
            out.reply(parked, SyncGroupResponse(error))
            # Its session was on hold while it was parked; it runs again from now, or a
            # member that never comes back would stay forever.
            self._schedule_heartbeat(group, group.members[member_id], now_ms)
        group.awaiting_sync.clear()

    def _schedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember, now_ms: int) -> None:
        self.timers.schedule(classic_session_key(group.group_id, member.member_id),
                             now_ms + member.session_timeout_ms,
                             TimerOp(TimerKind.CLASSIC_SESSION, group.group_id, member.member_id))

    def _remove_member(self, group: ClassicGroup, member_id: str, out: ResultBuilder) -> None:
        """Remove a member, answering its parked requests so no client waits forever."""
        self.timers.cancel(classic_session_key(group.group_id, member_id))
        parked_join = group.awaiting_join.get(member_id)
        if parked_join is not None:
            out.reply(parked_join, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID))
        parked_sync = group.awaiting_sync.get(member_id)
        if parked_sync is not None:
            out.reply(parked_sync, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        member = group.members.get(member_id)
        if member is not None:
            out.member_gone(group, member)
        group.remove(member_id)

    def _after_members_removed(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, out, now_ms)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group, out, now_ms)

    def heartbeat_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.groups.get(op.group_id)
        if group is None or group.is_in(S.DEAD):
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "session timeout", Departure.EXPIRED, group=group)
        member_id = op.member_id
        if group.is_pending(member_id):
            self.expire_member(group, member_id, out, now_ms)
            return out.build()
        if not group.has_member(member_id):
            return EMPTY_RESULT
        is_new = member_id in group.new_members
        if not is_new and (member_id in group.awaiting_join or member_id in group.awaiting_sync):
            # Parked in a rebalance, which will re-arm its session when it completes.
            return EMPTY_RESULT
        self.expire_member(group, member_id, out, now_ms)
        return out.build()

    def expire_member(self, group: ClassicGroup, member_id: str, out: ResultBuilder, now_ms: int) -> None:
        """Remove a member (or pending member) whose session ran out, answering its parked
        requests, and let the group rebalance without it."""
        if group.is_pending(member_id):
            self.timers.cancel(classic_session_key(group.group_id, member_id))
            group.remove(member_id)
            self._maybe_complete_join_phase(group, out, now_ms)
            return
        self._remove_member(group, member_id, out)
        self._after_members_removed(group, out, now_ms)

    def rebalance_now(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        """Start a rebalance as a new member's join would: a Stable or CompletingRebalance
        group prepares a new one (members learn it from their next heartbeat); a rebalance
        already preparing goes on as it is."""
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, out, now_ms)

    # ======================================================================================
    # SyncGroup
    # ======================================================================================

    def sync(self, req: SyncGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle SyncGroup; followers are parked until the leader's assignment is stored."""
        group = self.shard.groups.get(req.group_id)
        if group is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {req.group_id} does not exist")
        if group.is_in(S.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"group {req.group_id} is being removed")
        group.validate_member(req.member_id, req.group_instance_id)
        if req.generation_id != group.generation:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                             f"generation {req.generation_id} is not the group's {group.generation}")
        if ((req.protocol_type is not None and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and req.protocol_name != group.protocol)):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol type or name differs from the group's")
        if group.is_in(S.EMPTY):
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(S.PREPARING_REBALANCE):
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "SyncGroup", group=group)
        self._sync_received(group, req.member_id)
        if group.is_in(S.STABLE):
            member = group.members[req.member_id]
            out.reply(reply, SyncGroupResponse(ErrorCode.NONE, group.protocol_type, group.protocol, member.assignment))
            return out.build()
        # CompletingRebalance: park until the leader's assignment is stored.
        group.awaiting_sync[req.member_id] = reply
        if group.is_leader(req.member_id):
            given = dict(req.assignments)
            # Members the leader forgot get an empty assignment; ids it invented are ignored.
            assignments = {mid: given.get(mid, b"") for mid in group.members}
            out.record(ClassicGroupRecord(group.group_id, group.to_value(now_ms, assignments)))
            for member_id, member in list(group.members.items()):
                assignment = assignments[member_id]
                if assignment != member.reported:
                    out.member_assigned(group, member, assignment)
                group.members[member_id] = replace(member, assignment=assignment, reported=assignment)
            group.transition_to(S.STABLE, now_ms)
            for member_id, parked in list(group.awaiting_sync.items()):
                member = group.members[member_id]
                out.reply(parked, SyncGroupResponse(ErrorCode.NONE, group.protocol_type, group.protocol,
                                                    member.assignment))
                self._schedule_heartbeat(group, member, now_ms)
            group.awaiting_sync.clear()
        return out.build()

    def _sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync:
            self.timers.cancel(classic_sync_key(group.group_id))

    # ======================================================================================
    # Heartbeat
    # ======================================================================================

    def heartbeat(self, req: HeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle Heartbeat: keep the session alive and tell the member if it must rejoin."""
        group = self.shard.groups.get(req.group_id)
        if group is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {req.group_id} does not exist")
        if group.state is S.DEAD:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        member = group.members.get(req.member_id)
        if member is None or req.group_instance_id is not None:
            group.validate_member(req.member_id, req.group_instance_id)
            member = group.members[req.member_id]
        if req.generation_id != group.generation:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                             f"generation {req.generation_id} is not the group's {group.generation}")
        state = group.state
        if state is S.EMPTY:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        # Every session key holds TimerOp(CLASSIC_SESSION, group, member): extend it in place.
        key = classic_session_key(group.group_id, member.member_id)
        deadline = now_ms + member.session_timeout_ms
        if not self.timers.extend(key, deadline):
            self.timers.schedule(key, deadline, TimerOp(TimerKind.CLASSIC_SESSION, group.group_id, member.member_id))
        if state is S.PREPARING_REBALANCE:
            return Result((), ((reply, HEARTBEAT_REBALANCING),))
        return Result((), ((reply, HEARTBEAT_OK),))

    # ======================================================================================
    # LeaveGroup
    # ======================================================================================

    def leave(self, req: LeaveGroupRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle LeaveGroup: one member (v0-v2) or a batch by member or instance id (v3+)."""
        group = self.shard.groups.get(req.group_id)
        if group is None:
            # As Kafka answers: the request succeeds and each member is unknown (v0-v2 carry
            # the one member's error as the request's).
            return Result((), ((reply, LeaveGroupResponse(ErrorCode.NONE, tuple(
                LeftMember(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID) for m in req.members))),))
        if group.is_in(S.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "LeaveGroup", group=group)
        results: list[LeftMember] = []
        removed_any = False
        for leaving in req.members:
            error = ErrorCode.NONE
            if leaving.member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal by instance id ("remove members").
                target = group.static_member_id(leaving.group_instance_id)
                if target is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_member(group, target, out)
            elif group.is_pending(leaving.member_id):
                self.timers.cancel(classic_session_key(group.group_id, leaving.member_id))
                group.remove(leaving.member_id)
            else:
                try:
                    group.validate_member(leaving.member_id, leaving.group_instance_id)
                except GroupError as exc:
                    error = exc.code
                else:
                    self._remove_member(group, leaving.member_id, out)
            removed_any = removed_any or error is ErrorCode.NONE
            results.append(LeftMember(leaving.member_id, leaving.group_instance_id, error))
        if removed_any:
            self._after_members_removed(group, out, now_ms)
        out.reply(reply, LeaveGroupResponse(ErrorCode.NONE, tuple(results)))
        return out.build()

    # ======================================================================================
    # Loading
    # ======================================================================================

    def group_loaded(self, group: ClassicGroup, now_ms: int) -> Result:
        """Re-arm sessions of a group rebuilt from the log; shrink it if over the size limit."""
        for member in group.members.values():
            self._schedule_heartbeat(group, member, now_ms)
        if len(group.members) > self.config.max_group_size and group.can_rebalance():
            out = ResultBuilder()
            self._prepare_rebalance(group, out, now_ms)
            return out.build()
        return EMPTY_RESULT

    def delete_group(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        """DeleteGroups of an Empty group: its offsets and its record go; it is Dead."""
        for topic, partition in sorted(self.shard.stored.offsets.get(group.group_id, {})):
            out.record(OffsetCommitRecord(group.group_id, topic, partition, None))
        out.record(ClassicGroupRecord(group.group_id, None))
        group.transition_to(S.DEAD, now_ms)
        del self.shard.groups[group.group_id]

    # ======================================================================================
    # Groups changing kind (migration.py)
    # ======================================================================================

    def retire(self, group: ClassicGroup, now_ms: int) -> None:
        """Take `group` out of this shard's classic groups (it became a consumer group): its
        timers stop and it is Dead. Its parked replies are the caller's to answer first."""
        group_id = group.group_id
        self.timers.cancel(classic_join_key(group_id))
        self.timers.cancel(classic_sync_key(group_id))
        for member_id in list(group.members) + list(group.pending_members):
            self.timers.cancel(classic_session_key(group_id, member_id))
        if self.shard.groups.get(group_id) is group:
            del self.shard.groups[group_id]
        group.transition_to(S.DEAD, now_ms)

    def adopt(self, group: ClassicGroup, out: ResultBuilder, now_ms: int) -> None:
        """Take in `group`, rebuilt from its persisted value (a consumer group turned classic
        again): arm its members' sessions and start a rebalance, so they rejoin the classic way."""
        self.shard.groups[group.group_id] = group
        self.group_loaded(group, now_ms)
        self._prepare_rebalance(group, out, now_ms)
