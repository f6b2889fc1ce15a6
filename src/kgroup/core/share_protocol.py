"""ShareGroupHeartbeat, ShareGroupDescribe, the share-group offsets APIs and the durable
share-partition state (KIP-932).

How this works: the heartbeat's steps every modern kind shares (find or create the group
and the member, bump the group epoch when membership or a subscription changed, compute the
target when the group epoch is ahead of it, arm the session, remove members) are
modern_protocol.py's; this module fills in the share group's: validation; the epoch check
(epoch 0 joins, -1 leaves; otherwise the epoch must be the member's, or its previous one
when our last answer was lost); the metadata (topic names); the `simple` share assignor;
the member taking its target (and the target epoch) at once, as there is nothing to revoke;
and the answer. Only initialized share partitions are assigned (`ShareGroup.initialized`).
A topic the group did not subscribe to before is assigned once its share partitions are
initialized, right after the heartbeat that brought it (`settle`: a timer at once, as Kafka
initializes them through its share coordinator in the background): that heartbeat's epoch
counts the member, the initialization bumps the epoch again with the topic in. A topic that
grew keeps its initialized partitions assigned meanwhile, and its new ones come in the same
way. Everything durable comes out as records that replay
(`ShareGroup.apply`, through modern_group's record registry) applies.

The share-partition state lives here too, as Kafka's share coordinator keeps it: the
in-memory share partition (acquisitions, locks) runs where its topic partition is served
(broker/share/share_fetch.py) and writes its durable view with `write_state`, fenced by the state
epoch; DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets read
and reset it. See broker/share/share_state.py for why it sits in the group's metadata partition.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

from kgroup.assignors.share_simple import SimpleShareAssignor
from kgroup.assignors.spec import GroupSpec, MemberSpec
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.kinds import find_group
from kgroup.core.modern_group import SubscribedTopics
from kgroup.core.modern_protocol import HeartbeatStep, Joined, ModernProtocol
from kgroup.core.records import (
    InitializedTopic,
    Partitions,
    ShareCurrentRecord,
    ShareCurrentValue,
    ShareInitRecord,
    ShareMemberValue,
    ShareStateRecord,
    ShareStateValue,
    ShareTargetRecord,
)
from kgroup.core.result import EMPTY_RESULT, ReplyTo, Result, ResultBuilder
from kgroup.core.share_configs import ShareConfigs
from kgroup.core.share_partition import RecordState
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
from kgroup.core.state import ShardState, drop_entry
from kgroup.core.timers import TimerKind, TimerOp, share_init_key, share_session_key

ASSIGNOR = SimpleShareAssignor()
# The longest member id Kafka 4.4 takes in a ShareGroupHeartbeat (a UUID's string form).
MAX_MEMBER_ID_LENGTH = 36


class ShareProtocol(ModernProtocol):
    GROUP = ShareGroup
    API = "ShareGroupHeartbeat"
    JOIN_EPOCH = SHARE_JOIN_EPOCH
    LEAVE_EPOCHS = (SHARE_LEAVE_EPOCH,)
    SESSION_TIMER = TimerKind.SHARE_SESSION
    session_key = staticmethod(share_session_key)

    def __init__(self, shard: ShardState) -> None:
        super().__init__(shard, shard.share_groups)
        self.configs = ShareConfigs(shard)

    # ======================================================================================
    # ShareGroupHeartbeat: the kind's parts of modern_protocol.py's steps
    # ======================================================================================

    def validate(self, req: ShareGroupHeartbeatRequest) -> None:
        """Raise unless the request is well formed (nothing about the group yet)."""
        if not req.member_id or len(req.member_id) > MAX_MEMBER_ID_LENGTH:
            # Kafka answers these without a message (a member id is a UUID's 22 to 36 characters),
            # checked before the rest of the request: before an empty group id too.
            raise GroupError(ErrorCode.INVALID_REQUEST, "")
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty")
        if req.rack_id == "":
            raise GroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch < SHARE_LEAVE_EPOCH:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"MemberEpoch {req.member_epoch} is invalid")
        if req.member_epoch == SHARE_JOIN_EPOCH and req.subscribed_topic_names is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")

    def member_for(self, group: ShareGroup, req: ShareGroupHeartbeatRequest,
                   member_id: str) -> tuple[ShareGroupMember | None, None]:
        """(the member, or None if new; share members are never static)."""
        member = group.members.get(member_id)
        if req.member_epoch == SHARE_JOIN_EPOCH:
            return member, None
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group.group_id}")
        # The member's epoch, or its previous one when our last answer was lost.
        if req.member_epoch > member.epoch or (
                req.member_epoch < member.epoch and req.member_epoch != member.current.previous_member_epoch):
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"epoch {req.member_epoch} is not the member's ({member.epoch})")
        return member, None

    def merge(self, old: ShareMemberValue | None, req: ShareGroupHeartbeatRequest, extra: None) -> ShareMemberValue:
        return ShareMemberValue(
            rack_id=req.rack_id if req.rack_id is not None else (old.rack_id if old else None),
            client_id=req.client_id or (old.client_id if old else ""),
            client_host=req.client_host or (old.client_host if old else ""),
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None
                                    else (old.subscribed_topic_names if old else ())))

    # The topic names, read at C speed (see ModernProtocol.subscribed_metadata).
    subscription = staticmethod(attrgetter("subscribed_topic_names"))

    def topics_of(self, meta: ShareMemberValue, group: ShareGroup) -> set[str]:
        topics = self.shard.topics
        return {n for n in meta.subscribed_topic_names if n in topics}

    def settle(self, group: ShareGroup, joined: Joined, subscribed: SubscribedTopics, bump: bool,
               now_ms: int, out: ResultBuilder) -> tuple[SubscribedTopics, bool]:
        """Only initialized partitions are assigned (`assign`); a subscribed partition not
        initialized yet is initialized just after this heartbeat (`topics_initialized`), as
        Kafka's share coordinator does in the background. The group's metadata stays what
        the topics are, so the epoch moves once for it and once for the initialization."""
        if self._uninitialized(group, subscribed):
            key = share_init_key(group.group_id)
            if key not in self.timers:      # right after the first heartbeat that needs it
                out.then(self.timers.schedule, key, now_ms, TimerOp(TimerKind.SHARE_INIT, group.group_id))
        return subscribed, bump

    @staticmethod
    def _uninitialized(group: ShareGroup, subscribed: SubscribedTopics) -> bool:
        """Whether some subscribed partition is not initialized."""
        initialized = group.initialized
        for _, topic_id, count in subscribed:
            known = initialized.get(topic_id)
            if known is None or not known.covers(count):
                return True
        return False

    def topics_initialized(self, op: TimerOp, now_ms: int) -> Result:
        """The share partitions a group subscribes to and had not initialized are: each
        topic's are recorded, and the group epoch moves on, so the next heartbeats assign
        them (Kafka's next heartbeat finds its target short of the initialized partitions
        and bumps the epoch)."""
        group = self.groups.get(op.group_id)
        if group is None:
            return EMPTY_RESULT
        subscribed = self.subscribed_metadata(group.members, group)
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        initialized = False
        for name, topic_id, count in subscribed:
            known = group.initialized.get(topic_id)
            if known is None or not known.covers(count):
                have = known.partitions if known is not None else frozenset()
                value = InitializedTopic(name, have | frozenset(range(count)))
                out.record(ShareInitRecord(group.group_id, topic_id, value))
                initialized = True
        if initialized or subscribed != group.subscribed:
            out.record(self.records.epoch(group.group_id, group.epoch + 1, subscribed))
            out.changed(group.group_id, "share partitions initialized")
        return out.build()

    def loaded(self, now_ms: int) -> None:
        """Sessions, as every kind; and an initialization that had not run when the
        coordinator stopped runs now (a member's steady heartbeats would never ask again)."""
        super().loaded(now_ms)
        for group_id, group in self.groups.items():
            if self._uninitialized(group, group.subscribed):
                self.timers.schedule(share_init_key(group_id), now_ms, TimerOp(TimerKind.SHARE_INIT, group_id))

    def max_size(self) -> int:
        return self.shard.config.share_max_size

    def session_timeout(self, group_id: str, meta: ShareMemberValue) -> int:
        return self.configs.session_timeout(group_id)

    def assignment_interval(self, group_id: str) -> int:
        return self.configs.assignment_interval(group_id)

    def assign(self, group: ShareGroup, members: dict[str, ShareGroupMember], targets: dict[str, Partitions],
               subscribed: SubscribedTopics, out: ResultBuilder) -> dict[str, Partitions]:
        """Run the share assignor; record the targets that change."""
        by_name = {n: tid for n, tid, _ in subscribed}
        initialized = group.initialized
        assignable = {tid: initialized[tid].partitions if tid in initialized else frozenset()
                      for _, tid, _ in subscribed}
        # The assignor is sticky: each member's current target is where it starts from.
        spec = GroupSpec(members={
            mid: MemberSpec(mid, frozenset(by_name[n] for n in m.meta.subscribed_topic_names if n in by_name),
                            rack_id=m.meta.rack_id, assignment=dict(targets.get(mid, ())))
            for mid, m in sorted(members.items())},
            homogeneous=len({frozenset(m.meta.subscribed_topic_names) for m in members.values()}) <= 1,
            topic_names={tid: n for n, tid in by_name.items()}, assignable=assignable)
        result = ASSIGNOR.assign(spec, {tid: count for _, tid, count in subscribed})
        new_targets: dict[str, Partitions] = {}
        for mid in sorted(members):
            assigned = tuple((t, ps) for t, ps in sorted(result.get(mid, {}).items()) if ps)
            new_targets[mid] = assigned
            if targets.get(mid) != assigned:
                out.record(ShareTargetRecord(group.group_id, mid, assigned))
        return new_targets

    def next_current(self, group: ShareGroup, joined: Joined, req: ShareGroupHeartbeatRequest,
                     targets: dict[str, Partitions], target_epoch: int, out: ResultBuilder,
                     extra: None) -> ShareCurrentValue:
        # 6. The member takes its target (no revocation to wait for in a share group). A
        #    known member rejoining (epoch 0) steps on from where it stands, as Kafka 4.4's
        #    does: its epoch becomes its previous one, and with nothing changed it keeps both.
        current = joined.member.current if joined.old_meta is not None else NEW_SHARE_MEMBER
        target = targets.get(joined.member_id, ())
        if current.member_epoch == target_epoch and current.assigned == target and joined.old_meta is not None:
            return current
        nxt = ShareCurrentValue(target_epoch, current.member_epoch, target)
        out.record(ShareCurrentRecord(group.group_id, joined.member_id, nxt))
        return nxt

    def answer(self, group: ShareGroup, req: ShareGroupHeartbeatRequest, reply: ReplyTo, done: HeartbeatStep,
               out: ResultBuilder) -> None:
        # 8. Answer; the assignment when the member (re)joined, the request was a full one (it
        #    named the subscription) or the partitions changed, as Kafka 4.4 answers: an epoch
        #    that moves on with the same partitions says nothing of them.
        after = done.after
        full = (req.member_epoch == SHARE_JOIN_EPOCH or req.subscribed_topic_names is not None
                or done.before is None or after.assigned != done.before.assigned)
        out.reply(reply, ShareGroupHeartbeatResponse(
            ErrorCode.NONE, None, req.member_id, after.member_epoch,
            self.configs.heartbeat_interval(group.group_id), after.assigned if full else None))

    def steady(self, group: ShareGroup, req: ShareGroupHeartbeatRequest, reply: ReplyTo,
               now_ms: int) -> Result | None:
        """A settled member's heartbeat (`ModernProtocol.steady`): known, at its own epoch,
        which is the group's and its target's, holding its target, and nothing in the request
        that its metadata lacks (no subscription; its own rack, client id and host at most).
        Then every step keeps what is: `merge` folds to an equal value, so the group epoch
        and the target stay (and every subscribed topic is already initialized: no `settle`
        timer), `next_current` keeps the member's value, and the answer has no assignment.
        Only the session moves on. tests/unit/core/test_share_steady_heartbeat.py holds it to
        the steps' answers."""
        member = group.members.get(req.member_id)
        if member is None:
            return None
        current, epoch, meta = member.current, req.member_epoch, member.meta
        if (epoch <= SHARE_JOIN_EPOCH or epoch != current.member_epoch or epoch != group.target_epoch
                or epoch != group.epoch or req.subscribed_topic_names is not None
                or req.rack_id not in (None, meta.rack_id) or req.client_id not in ("", meta.client_id)
                or req.client_host not in ("", meta.client_host)
                or current.assigned != group.target.get(member.member_id, ())):
            return None
        group_id, member_id = group.group_id, member.member_id
        response = ShareGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, epoch,
                                               self.configs.heartbeat_interval(group_id), None)
        # Last, as the steps arm it at build(): nothing above changed anything.
        self._session(group_id, member_id, now_ms + self.configs.session_timeout(group_id))
        return Result((), ((reply, response),)) if reply is not None else EMPTY_RESULT

    # ---- leaving and expiry -----------------------------------------------------------------

    def left(self, group: ShareGroup, member: ShareGroupMember, req: ShareGroupHeartbeatRequest,
             reply: ReplyTo, now_ms: int, out: ResultBuilder) -> None:
        self.remove_members(group, [req.member_id], out, now_ms)
        out.reply(reply, ShareGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, SHARE_LEAVE_EPOCH, 0))

    # ---- ShareGroupDescribe -----------------------------------------------------------------

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        described = []
        for group_id in group_ids:
            group = self.shard.share_groups.get(group_id)
            if group is None:
                described.append(DescribedShareGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, state=""))
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
        """Persist a share partition's state unless its leader epoch or state epoch is stale
        (the newest leader epoch is kept with the state)."""
        stored = self.shard.stored.share_states.get(req.group_id, {}).get((req.topic_id, req.partition))
        stored_leader = stored.leader_epoch if stored is not None else -1
        if 0 <= req.leader_epoch < stored_leader:
            raise GroupError(ErrorCode.FENCED_LEADER_EPOCH,
                             f"leader epoch {req.leader_epoch} is older than the stored {stored_leader}")
        if req.initialize and stored is not None and stored.state_epoch >= req.value.state_epoch:
            raise GroupError(ErrorCode.FENCED_STATE_EPOCH,
                             f"state epoch {req.value.state_epoch} is not newer than the stored {stored.state_epoch}")
        if not req.initialize and stored is not None and stored.state_epoch != req.value.state_epoch:
            raise GroupError(ErrorCode.FENCED_STATE_EPOCH,
                             f"state epoch {req.value.state_epoch} is not the stored {stored.state_epoch}")
        value = dataclasses.replace(req.value, leader_epoch=max(req.leader_epoch, stored_leader))
        if stored == value:
            return Result((), ((reply, None),))
        return Result((ShareStateRecord(req.group_id, req.topic_id, req.partition, value),), ((reply, None),))

    def delete_state(self, key: ShareStateKey, reply: ReplyTo, now_ms: int) -> Result:
        """Forget a share partition's state (DeleteShareGroupState); nothing to do without one."""
        if (key.topic_id, key.partition) not in self.shard.stored.share_states.get(key.group_id, {}):
            return Result((), ((reply, None),))
        return Result((ShareStateRecord(key.group_id, key.topic_id, key.partition, None),), ((reply, None),))

    def describe_offsets(self, req: DescribeShareOffsetsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Each share partition's start offset (-1 where it has no state; a group that does not
        exist has none, and is answered so, as Kafka answers it)."""
        states = self.shard.stored.share_states.get(req.group_id, {})
        keys = sorted(states) if req.partitions is None else list(req.partitions)
        group = self.shard.share_groups.get(req.group_id)
        initialized = group.initialized if group is not None else {}
        offsets = tuple(ShareOffset(t, p, states[(t, p)].start_offset,
                                    delivery_complete=delivery_complete(states[(t, p)]), initialized=True)
                        if (t, p) in states else ShareOffset(t, p, -1, initialized=(
                            t in initialized and p in initialized[t].partitions))
                        for t, p in keys)
        return Result((), ((reply, ShareOffsetsResponse(ErrorCode.NONE, offsets)),))

    def _empty_group(self, group_id: str) -> None:
        if not group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "The group id is invalid.")
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
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        gid = req.group_id
        if not gid:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "The group id is invalid.")
        group = self.shard.share_groups.get(gid)
        if group is None and not self.shard.stored.share_states.get(gid):
            if find_group(self.shard, gid) is not None:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"{gid} is not a share group")
            # As Kafka 4.4 makes it: at epoch 1, its (empty) target at epoch 1.
            out.record(self.records.epoch(gid, self.NEW_GROUP_EPOCH, ()))
            out.record(self.records.target_epoch(gid, self.NEW_GROUP_EPOCH))
            out.changed(gid, "AlterShareGroupOffsets")
        else:
            self._empty_group(gid)
        states = self.shard.stored.share_states.get(gid, {})
        for topic_id, partition, offset in req.offsets:
            old = states.get((topic_id, partition))
            epoch = old.state_epoch + 1 if old is not None else 0
            out.record(ShareStateRecord(req.group_id, topic_id, partition, ShareStateValue(epoch, offset)))
        # The partitions altered are initialized, as Kafka marks them: a member subscribing
        # to their topic is given them at once.
        initialized = group.initialized if group is not None else {}
        altered: dict[str, set[int]] = {}
        for topic_id, partition, _ in req.offsets:
            altered.setdefault(topic_id, set()).add(partition)
        for name, (topic_id, count) in sorted(self.shard.topics.items()):
            if topic_id not in altered:
                continue
            known = initialized.get(topic_id)
            have = known.partitions if known is not None else frozenset()
            more = have | frozenset(p for p in altered[topic_id] if 0 <= p < count)
            if more != have:
                out.record(ShareInitRecord(gid, topic_id, InitializedTopic(name, more)))
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
        group = self.shard.share_groups.get(req.group_id)
        for topic_id in sorted(set(group.initialized if group is not None else ()) & set(req.topic_ids)):
            out.record(ShareInitRecord(req.group_id, topic_id, None))     # initialized again when next subscribed
        out.reply(reply, ShareOffsetsResponse(ErrorCode.NONE, tuple(gone)))
        return out.build()

    def topics_deleted(self, topic_ids: frozenset[str], now_ms: int) -> Result:
        """Topics deleted (or deleted and created again under a new id) are no longer
        initialized in any group: a topic of that name is initialized anew when subscribed."""
        if not topic_ids:
            return EMPTY_RESULT
        out = ResultBuilder()
        for group_id in sorted(self.groups):
            for topic_id in sorted(topic_ids & set(self.groups[group_id].initialized)):
                out.record(ShareInitRecord(group_id, topic_id, None))
        return out.build()

    def delete_progress(self, group: ShareGroup, out: ResultBuilder) -> None:
        """A deleted share group's share-partition states go with it, and what it initialized
        (tombstones, so no record of the group outlives it in a compacted log)."""
        for topic_id, partition in sorted(self.shard.stored.share_states.get(group.group_id, {})):
            out.record(ShareStateRecord(group.group_id, topic_id, partition, None))
        for topic_id in sorted(group.initialized):
            out.record(ShareInitRecord(group.group_id, topic_id, None))


def replay_share_state(shard: ShardState, record: ShareStateRecord) -> None:
    """Apply a ShareStateRecord to stored state."""
    states = shard.stored.share_states
    if record.value is None:
        drop_entry(states, record.group_id, (record.topic_id, record.partition))
    else:
        states.setdefault(record.group_id, {})[(record.topic_id, record.partition)] = record.value


def delivery_complete(value: ShareStateValue) -> int:
    """How many offsets of a share partition's persisted window, at or past its start, are
    done with (acknowledged or archived): KIP-1226's deliveryCompleteCount, which the lag
    subtracts, so a share partition whose state is not loaded is answered alike."""
    done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    return sum(b.last_offset - max(b.first_offset, value.start_offset) + 1 for b in value.batches
               if b.state in done and b.last_offset >= value.start_offset)
