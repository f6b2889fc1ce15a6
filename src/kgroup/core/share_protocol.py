"""ShareGroupHeartbeat, ShareGroupDescribe, the share-group offsets APIs and the durable
share-partition state (KIP-932).

How this works (numbered steps in `heartbeat`): validate; find the group and the member
(epoch 0 joins, -1 leaves; otherwise the epoch must be the member's, or its previous one
when our last answer was lost); fold the request into the member's metadata; bump the group
epoch when membership or a subscription changed; when the group epoch is ahead of the
target assignment, run the `simple` share assignor; hand the member its target (and the
target epoch) if it does not have it yet; re-arm its session. Everything durable comes out
as records that replay (share_group.apply_share_record) applies; the session timer is
staged on the ResultBuilder and armed only when the whole request succeeded.

The share-partition state lives here too, as Kafka's share coordinator keeps it: the
in-memory share partition (acquisitions, locks) runs where its topic partition is served
(broker/share/share_fetch.py) and writes its durable view with `write_state`, fenced by the state
epoch; DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets read
and reset it. See broker/share/share_state.py for why it sits in the group's metadata partition.
"""

from __future__ import annotations

from kgroup.assignors.share_simple import SimpleShareAssignor
from kgroup.assignors.spec import GroupSpec, MemberSpec
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import (
    Partitions,
    ShareCurrentRecord,
    ShareCurrentValue,
    ShareGroupEpochRecord,
    ShareMemberRecord,
    ShareMemberValue,
    ShareStateRecord,
    ShareStateValue,
    ShareTargetEpochRecord,
    ShareTargetRecord,
)
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.share_configs import ShareConfigs
from kgroup.core.share_group import NEW_SHARE_MEMBER, ShareGroup, ShareGroupMember
from kgroup.core.share_messages import (
    SHARE_JOIN_EPOCH,
    SHARE_LEAVE_EPOCH,
    AlterShareOffsetsRequest,
    DeleteShareOffsetsRequest,
    DescribedShareGroup,
    DescribedShareMember,
    DescribeShareOffsetsRequest,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareOffset,
    ShareOffsetsResponse,
    ShareStateKey,
    WriteShareStateRequest,
)
from kgroup.core.state import ShardState
from kgroup.core.timers import TimerKind, TimerOp, share_session_key

ASSIGNOR = SimpleShareAssignor()


class ShareProtocol:
    def __init__(self, shard: ShardState) -> None:
        self.shard = shard
        self.timers = shard.timers
        self.configs = ShareConfigs(shard)

    # ======================================================================================
    # ShareGroupHeartbeat
    # ======================================================================================

    def heartbeat(self, req: ShareGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle one ShareGroupHeartbeat for a share group, or a group that does not exist."""
        # 1. Validate the request as a whole.
        self.validate(req)
        out = ResultBuilder()
        group = self.shard.share_groups.get(req.group_id)
        if group is None:
            if req.member_epoch != SHARE_JOIN_EPOCH:
                # Only a join (epoch 0) makes a group; Kafka answers anything else so.
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {req.group_id} does not exist")
            group = ShareGroup(req.group_id)
        if req.member_epoch == SHARE_LEAVE_EPOCH:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {group.group_id}")
            self.remove(group, [req.member_id], out)
            out.reply(reply, ShareGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, SHARE_LEAVE_EPOCH, 0))
        else:
            self._step(group, req, reply, now_ms, out)
        if out.records:
            out.changed(group.group_id, "ShareGroupHeartbeat")
        return out.build()

    def validate(self, req: ShareGroupHeartbeatRequest) -> None:
        """Raise unless the request is well formed (nothing about the group yet)."""
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty")
        if not req.member_id:
            raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty")
        if req.member_epoch < SHARE_LEAVE_EPOCH:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"MemberEpoch {req.member_epoch} is invalid")
        if req.member_epoch == SHARE_JOIN_EPOCH and req.subscribed_topic_names is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request")

    def _step(self, group: ShareGroup, req: ShareGroupHeartbeatRequest, reply: ReplyTo, now_ms: int,
              out: ResultBuilder) -> None:
        gid = group.group_id
        # 2. Find or create the member, checking its epoch.
        member = group.members.get(req.member_id)
        if req.member_epoch == SHARE_JOIN_EPOCH:
            if member is None and len(group.members) >= self.shard.config.share_max_size:
                raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"group {gid} is full")
            current = NEW_SHARE_MEMBER
        else:
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {gid}")
            current = member.current
            if req.member_epoch > member.epoch or (
                    req.member_epoch < member.epoch and req.member_epoch != current.previous_member_epoch):
                raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"epoch {req.member_epoch} is not the member's ({member.epoch})")
        # 3. Fold the request into the member's metadata.
        old = member.meta if member is not None else None
        meta = ShareMemberValue(
            rack_id=req.rack_id if req.rack_id is not None else (old.rack_id if old else None),
            client_id=req.client_id or (old.client_id if old else ""),
            client_host=req.client_host or (old.client_host if old else ""),
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None
                                    else (old.subscribed_topic_names if old else ())))
        if meta != old:
            out.record(ShareMemberRecord(gid, req.member_id, meta))
        members = dict(group.members)
        members[req.member_id] = ShareGroupMember(req.member_id, meta, current)
        # 4. The group epoch moves when membership or what the group subscribes to changed.
        epoch = group.epoch
        is_new_group = gid not in self.shard.share_groups
        if is_new_group or old is None or old.subscribed_topic_names != meta.subscribed_topic_names:
            subscribed = self._subscribed(members)
            epoch = group.epoch + 1
            out.record(ShareGroupEpochRecord(gid, epoch, subscribed))
        else:
            subscribed = group.subscribed
        # 5. A new target assignment when the group epoch is ahead of it.
        targets, target_epoch = group.target, group.target_epoch
        if epoch > target_epoch:
            targets = self._assign(group, members, subscribed, out)
            target_epoch = epoch
            out.record(ShareTargetEpochRecord(gid, target_epoch))
        # 6. The member takes its target (no revocation to wait for in a share group).
        target = targets.get(req.member_id, ())
        changed = current.member_epoch != target_epoch or current.assigned != target or member is None
        if changed:
            out.record(ShareCurrentRecord(gid, req.member_id,
                                          ShareCurrentValue(target_epoch, current.member_epoch, target)))
        # 7. The session runs from this heartbeat.
        self.arm_session(gid, req.member_id, now_ms + self.configs.session_timeout(gid), out)
        # 8. Answer; the assignment only when it changed or the member (re)joined.
        full = changed or req.member_epoch == SHARE_JOIN_EPOCH
        out.reply(reply, ShareGroupHeartbeatResponse(
            ErrorCode.NONE, None, req.member_id, target_epoch if changed else current.member_epoch,
            self.configs.heartbeat_interval(gid), target if full else None))

    def _subscribed(self, members: dict[str, ShareGroupMember]) -> tuple[tuple[str, str, int], ...]:
        topics = self.shard.topics
        names = {n for m in members.values() for n in m.meta.subscribed_topic_names if n in topics}
        return tuple(sorted((n, *topics[n]) for n in names))

    def _assign(self, group: ShareGroup, members: dict[str, ShareGroupMember],
                subscribed: tuple[tuple[str, str, int], ...], out: ResultBuilder) -> dict[str, Partitions]:
        """Run the share assignor; record the targets that change."""
        by_name = {n: tid for n, tid, _ in subscribed}
        spec = GroupSpec(members={
            mid: MemberSpec(mid, frozenset(by_name[n] for n in m.meta.subscribed_topic_names if n in by_name),
                            rack_id=m.meta.rack_id)
            for mid, m in sorted(members.items())})
        result = ASSIGNOR.assign(spec, {tid: count for _, tid, count in subscribed})
        targets: dict[str, Partitions] = {}
        for mid in sorted(members):
            assigned = tuple((t, ps) for t, ps in sorted(result.get(mid, {}).items()) if ps)
            targets[mid] = assigned
            if group.target.get(mid) != assigned:
                out.record(ShareTargetRecord(group.group_id, mid, assigned))
        return targets

    def arm_session(self, group_id: str, member_id: str, deadline_ms: int, out: ResultBuilder) -> None:
        out.then(self._session, group_id, member_id, deadline_ms)

    def _session(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        key = share_session_key(group_id, member_id)
        if not self.timers.extend(key, deadline_ms):
            self.timers.schedule(key, deadline_ms, TimerOp(TimerKind.SHARE_SESSION, group_id, member_id))

    # ---- leaving and expiry -----------------------------------------------------------------

    def remove(self, group: ShareGroup, member_ids: list[str], out: ResultBuilder) -> None:
        """Remove members; the group epoch moves so the others get their partitions."""
        for member_id in member_ids:
            out.record(ShareCurrentRecord(group.group_id, member_id, None))
            out.record(ShareTargetRecord(group.group_id, member_id, None))
            out.record(ShareMemberRecord(group.group_id, member_id, None))
            out.then(self.timers.cancel, share_session_key(group.group_id, member_id))
        remaining = {mid: m for mid, m in group.members.items() if mid not in member_ids}
        out.record(ShareGroupEpochRecord(group.group_id, group.epoch + 1, self._subscribed(remaining)))

    def session_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.share_groups.get(op.group_id)
        if group is None or op.member_id not in group.members:
            return EMPTY_RESULT
        out = ResultBuilder()
        out.changed(group.group_id, "session timeout", Departure.EXPIRED)
        self.remove(group, [op.member_id], out)
        return out.build()

    def topics_changed(self, now_ms: int) -> Result:
        """Bump the epoch of every share group whose subscribed topics' metadata changed."""
        out = ResultBuilder()
        for group_id in sorted(self.shard.share_groups):
            group = self.shard.share_groups[group_id]
            subscribed = self._subscribed(group.members)
            if subscribed != group.subscribed:
                out.record(ShareGroupEpochRecord(group_id, group.epoch + 1, subscribed))
                out.changed(group_id, "topic metadata changed")
        return out.build()

    def loaded(self, now_ms: int) -> None:
        """After a restart every member gets a fresh session to come back in."""
        for group_id, group in self.shard.share_groups.items():
            for member_id in group.members:
                self.timers.schedule(share_session_key(group_id, member_id),
                                     now_ms + self.configs.session_timeout(group_id),
                                     TimerOp(TimerKind.SHARE_SESSION, group_id, member_id))

    # ---- ShareGroupDescribe -----------------------------------------------------------------

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        described = []
        for group_id in group_ids:
            group = self.shard.share_groups.get(group_id)
            if group is None:
                described.append(DescribedShareGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND))
                continue
            described.append(DescribedShareGroup(
                group_id, ErrorCode.NONE, group.state().value, group.epoch, group.target_epoch, ASSIGNOR.name,
                tuple(DescribedShareMember(m.member_id, m.meta.rack_id, m.epoch, m.meta.client_id,
                                           m.meta.client_host, m.meta.subscribed_topic_names, m.current.assigned)
                      for m in group.members.values())))
        return Result((), ((reply, tuple(described)),))

    # ======================================================================================
    # Share-partition state
    # ======================================================================================

    def membership(self, group_id: str, member_id: str) -> ErrorCode:
        """Whether `member_id` may open a share session in `group_id`: NONE, GROUP_ID_NOT_FOUND
        (no share group of that id) or UNKNOWN_MEMBER_ID."""
        group = self.shard.share_groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID

    def read_state(self, key: ShareStateKey, reply: ReplyTo, now_ms: int) -> Result:
        """The stored state of one share partition (None: it has none yet)."""
        value = self.shard.stored.share_states.get(key.group_id, {}).get((key.topic_id, key.partition))
        return Result((), ((reply, value),))

    def write_state(self, req: WriteShareStateRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Persist a share partition's state unless its state epoch is stale."""
        stored = self.shard.stored.share_states.get(req.group_id, {}).get((req.topic_id, req.partition))
        if stored is not None and stored.state_epoch != req.value.state_epoch:
            raise GroupError(ErrorCode.FENCED_STATE_EPOCH,
                             f"state epoch {req.value.state_epoch} is not the stored {stored.state_epoch}")
        if stored == req.value:
            return Result((), ((reply, None),))
        return Result((ShareStateRecord(req.group_id, req.topic_id, req.partition, req.value),), ((reply, None),))

    def describe_offsets(self, req: DescribeShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Each share partition's start offset (-1 where it has no state; a group that does not
        exist has none, and is answered so, as Kafka answers it)."""
        states = self.shard.stored.share_states.get(req.group_id, {})
        keys = sorted(states) if req.partitions is None else list(req.partitions)
        offsets = tuple(ShareOffset(t, p, states[(t, p)].start_offset if (t, p) in states else -1)
                        for t, p in keys)
        return Result((), ((reply, ShareOffsetsResponse(ErrorCode.NONE, offsets)),))

    def _empty_group(self, group_id: str) -> None:
        group = self.shard.share_groups.get(group_id)
        if group is None and not self.shard.stored.share_states.get(group_id):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"share group {group_id} does not exist")
        if group is not None and group.members:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP, f"share group {group_id} has members")

    def alter_offsets(self, req: AlterShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Restart share partitions at new start offsets (an empty group only): a new state
        epoch, so the running partition's next write is fenced and it reloads. A share group
        that does not exist is created empty, as Kafka creates it (a group id of another kind
        is not a share group)."""
        out = ResultBuilder()
        gid = req.group_id
        if gid not in self.shard.share_groups and not self.shard.stored.share_states.get(gid):
            if gid in self.shard.groups or gid in self.shard.consumer_groups:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"{gid} is not a share group")
            out.record(ShareGroupEpochRecord(gid, 0, ()))
            out.changed(gid, "AlterShareGroupOffsets")
        else:
            self._empty_group(gid)
        states = self.shard.stored.share_states.get(gid, {})
        for topic_id, partition, offset in req.offsets:
            old = states.get((topic_id, partition))
            epoch = old.state_epoch + 1 if old is not None else 0
            out.record(ShareStateRecord(req.group_id, topic_id, partition, ShareStateValue(epoch, offset)))
        out.reply(reply, ShareOffsetsResponse(ErrorCode.NONE, tuple(
            ShareOffset(t, p, o) for t, p, o in req.offsets)))
        return out.build()

    def delete_offsets(self, req: DeleteShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Forget the share partitions of whole topics (an empty group only)."""
        self._empty_group(req.group_id)
        states = self.shard.stored.share_states.get(req.group_id, {})
        out = ResultBuilder()
        gone = []
        for topic_id, partition in sorted(states):
            if topic_id in req.topic_ids:
                out.record(ShareStateRecord(req.group_id, topic_id, partition, None))
                gone.append(ShareOffset(topic_id, partition))
        out.reply(reply, ShareOffsetsResponse(ErrorCode.NONE, tuple(gone)))
        return out.build()

    def delete_group(self, group: ShareGroup, out: ResultBuilder) -> None:
        """The records that delete an empty share group and its share-partition states."""
        for topic_id, partition in sorted(self.shard.stored.share_states.get(group.group_id, {})):
            out.record(ShareStateRecord(group.group_id, topic_id, partition, None))
        out.record(ShareTargetEpochRecord(group.group_id, None))
        out.record(ShareGroupEpochRecord(group.group_id, None))


def replay_share_state(shard: ShardState, record: ShareStateRecord) -> None:
    """Apply a ShareStateRecord to stored state."""
    states = shard.stored.share_states
    if record.value is None:
        group = states.get(record.group_id)
        if group is not None:
            group.pop((record.topic_id, record.partition), None)
            if not group:
                del states[record.group_id]
    else:
        states.setdefault(record.group_id, {})[(record.topic_id, record.partition)] = record.value
