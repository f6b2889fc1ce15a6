"""ConsumerGroupHeartbeat: the consumer protocol's one request, and its timers (KIP-848).

How this works (numbered steps in `heartbeat_in` and `step`): validate; find or create the
group and the member (epoch 0 joins, -1 leaves, -2 is a static member leaving for a moment);
fold the request into the member's metadata; recompute what the group subscribes to; bump
the group epoch if anything the assignment depends on changed; if the group epoch is ahead
of the target, run the server assignor; move the member one reconciliation step towards
its target (consumer_group.reconcile); re-arm its session (and, while it owes a revocation,
its rebalance timeout); answer with its epoch and, when it changed or was asked for in
full, its assignment. Everything durable comes out as records, which replay applies; the
timers are staged on the ResultBuilder (`then`) and armed only when the whole request
succeeded, so a request that raises at any step changes nothing.

These handlers see consumer groups (and "no group yet"); the coordinator routes a
heartbeat for a classic group to migration.py, which converts it into records and hands
the result to `heartbeat_in`. Removing members may turn a group classic again: that is the
injected `Downgrade`'s business.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kgroup.assignors import GroupSpec, MemberSpec, UnknownAssignor, get_server_assignor
from kgroup.core.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    as_dict,
    as_tuple,
    reconcile,
)
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.group_configs import GroupConfigs
from kgroup.core.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from kgroup.core.records import (
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberValue,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
    Partitions,
)
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import TimerKind, TimerOp, consumer_revoke_key, consumer_session_key

if TYPE_CHECKING:
    from kgroup.core.migration import Downgrade

NEW_MEMBER = ConsumerCurrentValue(0, 0, MemberState.STABLE, (), ())

# (JoinGroup protocols, session timeout) of a classic member inside a consumer group.
ClassicJoin = tuple[tuple[tuple[str, bytes], ...], int]


@dataclass(frozen=True, slots=True)
class HeartbeatStep:
    """What one heartbeat's reconciliation step did to its member (`ConsumerProtocol.step`)."""

    member_id: str
    before: ConsumerCurrentValue                # the member's current assignment before
    after: ConsumerCurrentValue                 # and after the step
    replaced: ConsumerGroupMember | None        # a static member whose place it took


@dataclass(frozen=True, slots=True)
class _Joined:
    """Steps 2-3: the member as the request leaves it (not yet replayed)."""

    member_id: str
    member: ConsumerGroupMember                 # with its current assignment before the step
    old_meta: ConsumerMemberValue | None        # None: a new member
    meta: ConsumerMemberValue
    replaced: ConsumerGroupMember | None

    def members_of(self, group: ConsumerGroup) -> dict[str, ConsumerGroupMember]:
        """The group's members once this one is in (and the one it replaced is out)."""
        members = dict(group.members)
        if self.replaced is not None:
            members.pop(self.replaced.member_id, None)
        members[self.member_id] = ConsumerGroupMember(self.member_id, self.meta, self.member.current)
        return members


class ConsumerProtocol:
    def __init__(self, shard: ShardState, downgrade: Downgrade) -> None:
        self.shard = shard
        self.config = shard.config
        # Session timeout and heartbeat interval per group: dynamic, TOML override, default.
        self.group_configs = GroupConfigs(shard)
        self.timers = shard.timers
        self.downgrade = downgrade

    # ======================================================================================
    # ConsumerGroupHeartbeat
    # ======================================================================================

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Handle one ConsumerGroupHeartbeat for a consumer group, or a group that does not exist."""
        # 1. Validate the request as a whole.
        self.validate(req)
        return self.heartbeat_in(self.shard.consumer_groups.get(req.group_id), req, reply, now_ms, ResultBuilder())

    def heartbeat_in(self, group: ConsumerGroup | None, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo,
                     now_ms: int, out: ResultBuilder) -> Result:
        """Steps 2-8 of a validated heartbeat on `group` (None: none yet), adding to `out`,
        which may already hold the records that made the group (an upgrade from classic)."""
        if group is None:
            if req.member_epoch != JOIN_EPOCH:
                # Only a join (epoch 0) makes a group; Kafka answers anything else so.
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {req.group_id} does not exist")
            group = ConsumerGroup(req.group_id)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            self._leave(group, req, reply, now_ms, out)
        else:
            done = self.step(group, req, now_ms, out)
            # 8. Answer; the assignment only when it changed or was asked for in full.
            full = req.member_epoch == JOIN_EPOCH or (
                req.rebalance_timeout_ms != -1 and req.owned is not None
                and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
            after = done.after
            changed = (after.assigned != done.before.assigned or after.member_epoch != done.before.member_epoch
                       or done.replaced is not None)
            out.reply(reply, ConsumerGroupHeartbeatResponse(
                ErrorCode.NONE, None, done.member_id, after.member_epoch,
                self.group_configs.consumer_heartbeat_interval(group.group_id), after.assigned if (full or changed) else None))
        if out.records:
            # A steady heartbeat writes nothing and changes no group: not worth a look.
            out.changed(group.group_id, "ConsumerGroupHeartbeat")
        return out.build()

    def step(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, now_ms: int, out: ResultBuilder,
             classic: ClassicJoin | None = None) -> HeartbeatStep:
        """Steps 2-7 of a heartbeat that joins or stays: the member's reconciliation step.

        `classic` carries a classic member's (JoinGroup protocols, session timeout): its join
        already shows what it gave up, so what it reports owning is taken as the truth.
        """
        joined = self._join_member(group, req, classic, out)                    # 2, 3
        subscribed, epoch = self._group_epoch(group, joined, out)              # 4
        targets, target_epoch = self._target(group, joined, subscribed, epoch, out)  # 5
        nxt = self._reconcile(group, joined, req, targets, target_epoch, classic is not None, out)  # 6
        self._arm_timers(group, joined, nxt, now_ms, out)                      # 7
        return HeartbeatStep(joined.member_id, joined.member.current, nxt, joined.replaced)

    def _join_member(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest,
                     classic: ClassicJoin | None, out: ResultBuilder) -> _Joined:
        # 2. Find or create the member, checking its epoch.
        member_id = req.member_id or self.shard.new_member_id(req.client_id or "consumer")
        member, replaced = self._member_for(group, req, member_id)
        # 3. Fold the request into the member's metadata.
        old_meta = member.meta if member is not None else None
        meta = self._merge(old_meta, req)
        if classic is not None:
            meta = replace(meta, classic_protocols=classic[0], classic_session_timeout_ms=classic[1])
        if member is None:
            if len(group.members) >= self.config.consumer_max_size:
                raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"group {group.group_id} is full")
            member = ConsumerGroupMember(member_id, meta, replaced.current if replaced is not None else NEW_MEMBER)
        if replaced is not None:
            self._remove_records(group, replaced.member_id, out)
        if meta != old_meta or replaced is not None:
            out.record(ConsumerMemberRecord(group.group_id, member_id, meta))
        return _Joined(member_id, member, old_meta, meta, replaced)

    def _group_epoch(self, group: ConsumerGroup, joined: _Joined,
                     out: ResultBuilder) -> tuple[tuple[tuple[str, str, int], ...], int]:
        # 4. What the group subscribes to now, and whether the assignment must be redone.
        #    Only a join, a replacement or a changed subscription can change it: a steady
        #    heartbeat must not cost work proportional to the group's size.
        old_meta, meta, replaced = joined.old_meta, joined.meta, joined.replaced
        is_new_group = group.group_id not in self.shard.consumer_groups
        old_subscribed = group.subscribed
        resubscribed = old_meta is not None and self._subscription(old_meta) != self._subscription(meta)
        if old_meta is None or replaced is not None or is_new_group or resubscribed:
            subscribed = self._subscribed_metadata(joined.members_of(group))
        else:
            subscribed = old_subscribed
        bump = (old_meta is None and replaced is None) or subscribed != old_subscribed or resubscribed
        if replaced is not None and self._subscription(replaced.meta) != self._subscription(meta):
            bump = True
        epoch = group.epoch
        if bump or is_new_group:
            epoch = group.epoch + 1
            out.record(ConsumerGroupEpochRecord(group.group_id, epoch, subscribed))
        return subscribed, epoch

    def _target(self, group: ConsumerGroup, joined: _Joined, subscribed: tuple[tuple[str, str, int], ...],
                epoch: int, out: ResultBuilder) -> tuple[dict[str, Partitions], int]:
        # 5. A new target assignment when the group epoch is ahead of it.
        target_epoch = group.target_epoch
        targets = dict(group.target)
        replaced, member_id = joined.replaced, joined.member_id
        if replaced is not None and replaced.member_id in targets:
            targets[member_id] = targets.pop(replaced.member_id)
            out.record(ConsumerTargetRecord(group.group_id, member_id, targets[member_id]))
        if epoch > target_epoch:
            targets = self._assign(group, joined.members_of(group), targets, subscribed, out)
            target_epoch = epoch
            out.record(ConsumerTargetEpochRecord(group.group_id, target_epoch))
        return targets, target_epoch

    def _reconcile(self, group: ConsumerGroup, joined: _Joined, req: ConsumerGroupHeartbeatRequest,
                   targets: dict[str, Partitions], target_epoch: int, is_classic: bool,
                   out: ResultBuilder) -> ConsumerCurrentValue:
        # 6. One reconciliation step for this member.
        member_id, member, replaced = joined.member_id, joined.member, joined.replaced
        owners = group.owners
        if replaced is not None:
            owners = {k: (member_id if v == replaced.member_id else v) for k, v in owners.items()}
        current = member.current
        if req.member_epoch == JOIN_EPOCH and replaced is None and current is not NEW_MEMBER:
            current = NEW_MEMBER  # a rejoin after being fenced starts from nothing
        if is_classic and req.owned is not None and current is not NEW_MEMBER:
            # A classic member revokes before it rejoins: what it no longer reports is released.
            # (An eager member reports nothing: it gave everything up.) Then recompute in full,
            # as for a member waiting on unreleased partitions.
            still = as_dict(req.owned)
            current = ConsumerCurrentValue(
                current.member_epoch, current.previous_member_epoch, MemberState.UNRELEASED_PARTITIONS,
                as_tuple({t: set(ps) & still.get(t, set()) for t, ps in current.assigned}), ())
        nxt = reconcile(member_id, current, targets.get(member_id, ()), target_epoch, owners, req.owned)
        if nxt != member.current or replaced is not None or member_id not in group.members:
            out.record(ConsumerCurrentRecord(group.group_id, member_id, nxt))
        return nxt

    def _arm_timers(self, group: ConsumerGroup, joined: _Joined, nxt: ConsumerCurrentValue, now_ms: int,
                    out: ResultBuilder) -> None:
        # 7. Timers: the session always; the rebalance timeout while a revocation is owed.
        group_id, member_id, meta, before = group.group_id, joined.member_id, joined.meta, joined.member.current
        session = (meta.classic_session_timeout_ms if meta.is_classic
                   else self.group_configs.consumer_session_timeout(group_id))
        self.arm_session(group_id, member_id, now_ms + session, out)
        revoke = consumer_revoke_key(group_id, member_id)
        if nxt.state is MemberState.UNREVOKED_PARTITIONS:
            if (before.state is not MemberState.UNREVOKED_PARTITIONS
                    or nxt.pending_revocation != before.pending_revocation):
                out.then(self.timers.schedule, revoke, now_ms + meta.rebalance_timeout_ms,
                         TimerOp(TimerKind.CONSUMER_REVOKE, group_id, member_id, generation=nxt.member_epoch))
        elif revoke in self.timers:
            out.then(self.timers.cancel, revoke)

    def arm_session(self, group_id: str, member_id: str, deadline_ms: int, out: ResultBuilder) -> None:
        """Stage the member's session timer to run out at `deadline_ms`."""
        out.then(self._session, group_id, member_id, deadline_ms)

    def _session(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        key = consumer_session_key(group_id, member_id)
        # The usual heartbeat moves an armed session on, keeping its operation.
        if not self.timers.extend(key, deadline_ms):
            self.timers.schedule(key, deadline_ms, TimerOp(TimerKind.CONSUMER_SESSION, group_id, member_id))

    def validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Raise unless the request is well formed (step 1; nothing about the group yet)."""
        def invalid(why: str) -> GroupError:
            return GroupError(ErrorCode.INVALID_REQUEST, why)

        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty")
        if req.api_version >= 1 and not req.member_id:
            raise invalid("MemberId can't be empty")
        if req.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch {req.member_epoch} is invalid")
        if req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
            raise invalid("MemberEpoch -2 is only for static members (InstanceId is missing)")
        if req.member_epoch != JOIN_EPOCH and req.api_version == 0 and not req.member_id:
            raise invalid("MemberId can't be empty")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request")
            if req.owned is None or len(req.owned) != 0:
                raise invalid("TopicPartitions must be empty when (re-)joining")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request")
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex {req.subscribed_topic_regex!r} is invalid: {exc}") from None
        if req.server_assignor is not None and req.server_assignor not in self.config.consumer_assignors:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported; "
                             f"supported: {', '.join(self.config.consumer_assignors)}")

    def _member_for(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest,
                    member_id: str) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember | None]:
        """(the member, or None if new; a static member it replaces, or None)."""
        static = group.static_member(req.instance_id)
        if req.member_epoch == JOIN_EPOCH:
            if static is not None and static.member_id != member_id:
                if static.epoch != STATIC_LEAVE_EPOCH:
                    raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"static member {req.instance_id} is still in use by {static.member_id}")
                return None, static
            return group.members.get(member_id), None
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group.group_id}")
        if req.instance_id is not None and member.meta.instance_id != req.instance_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"instance {req.instance_id} is not {member_id}'s")
        # Epoch check: ahead is fenced; behind is fenced unless it is the previous epoch and
        # the member owns nothing beyond what it is assigned (it missed our last answer).
        if req.member_epoch > member.epoch:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"epoch {req.member_epoch} is ahead of the member's {member.epoch}")
        if req.member_epoch < member.epoch:
            owned_ok = req.owned is not None and _subset(req.owned, member.current.assigned)
            if req.member_epoch != member.current.previous_member_epoch or not owned_ok:
                raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"epoch {req.member_epoch} is behind the member's {member.epoch}")
        return member, None

    @staticmethod
    def _merge(old: ConsumerMemberValue | None, req: ConsumerGroupHeartbeatRequest) -> ConsumerMemberValue:
        def pick(new, previous, default):
            if new is not None:
                return new
            return previous if old is not None else default

        return ConsumerMemberValue(
            instance_id=req.instance_id if req.instance_id is not None else (old.instance_id if old else None),
            rack_id=pick(req.rack_id, old.rack_id if old else None, None),
            client_id=req.client_id or (old.client_id if old else ""),
            client_host=req.client_host or (old.client_host if old else ""),
            subscribed_topic_names=tuple(sorted(req.subscribed_topic_names)) if req.subscribed_topic_names is not None
            else (old.subscribed_topic_names if old else ()),
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else (old.subscribed_topic_regex if old else None)) or None,
            server_assignor=pick(req.server_assignor, old.server_assignor if old else None, None),
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else (old.rebalance_timeout_ms if old else 300_000)),
        )

    @staticmethod
    def _subscription(meta: ConsumerMemberValue) -> tuple:
        return (meta.subscribed_topic_names, meta.subscribed_topic_regex, meta.server_assignor)

    def _topics_of(self, meta: ConsumerMemberValue) -> set[str]:
        """Names of existing topics the member subscribes to (by name or regex)."""
        names = {n for n in meta.subscribed_topic_names if n in self.shard.topics}
        if meta.subscribed_topic_regex:
            pattern = re.compile(meta.subscribed_topic_regex)
            names.update(n for n in self.shard.topics if pattern.fullmatch(n))
        return names

    def _subscribed_metadata(self, members: dict[str, ConsumerGroupMember]) -> tuple[tuple[str, str, int], ...]:
        names: set[str] = set()
        for m in members.values():
            names |= self._topics_of(m.meta)
        return tuple(sorted((n, *self.shard.topics[n]) for n in names))

    def _assign(self, group: ConsumerGroup, members: dict[str, ConsumerGroupMember], targets: dict[str, Partitions],
                subscribed: tuple[tuple[str, str, int], ...], out: ResultBuilder) -> dict[str, Partitions]:
        """Run the server assignor most members ask for; record what changes."""
        votes = Counter(m.meta.server_assignor for m in members.values() if m.meta.server_assignor)
        preferred = self.config.consumer_assignors
        if votes:
            best = max(votes.values())
            name = next(a for a in preferred if votes.get(a) == best)
        else:
            name = preferred[0]
        try:
            assignor = get_server_assignor(name)
        except UnknownAssignor:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"no server assignor {name}") from None
        by_name = {n: tid for n, tid, _ in subscribed}
        spec = GroupSpec(members={
            mid: MemberSpec(
                member_id=mid,
                subscribed_topics=frozenset(by_name[n] for n in self._topics_of(m.meta) if n in by_name),
                instance_id=m.meta.instance_id,
                rack_id=m.meta.rack_id,
                assignment={t: tuple(ps) for t, ps in targets.get(mid, ())},
            )
            for mid, m in sorted(members.items())
        })
        result = assignor.assign(spec, {tid: count for _, tid, count in subscribed})
        new_targets: dict[str, Partitions] = {}
        for mid in sorted(members):
            assigned = tuple(sorted((t, tuple(sorted(ps))) for t, ps in result.get(mid, {}).items() if ps))
            new_targets[mid] = assigned
            if targets.get(mid) != assigned:
                out.record(ConsumerTargetRecord(group.group_id, mid, assigned))
        return new_targets

    # ---- leaving and fencing --------------------------------------------------------------

    def _leave(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo, now_ms: int,
               out: ResultBuilder) -> None:
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {group.group_id}")
        if req.instance_id is not None and member.meta.instance_id != req.instance_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"instance {req.instance_id} is not {req.member_id}'s")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # A static member steps out for a restart: it keeps its assignment (and the group
            # its epoch) until its session runs out.
            cur = member.current
            out.record(ConsumerCurrentRecord(group.group_id, member.member_id, ConsumerCurrentValue(
                STATIC_LEAVE_EPOCH, cur.previous_member_epoch, cur.state, cur.assigned, cur.pending_revocation)))
            self.arm_session(group.group_id, member.member_id,
                             now_ms + self.group_configs.consumer_session_timeout(group.group_id), out)
        else:
            self.fence(group, [member.member_id], out, now_ms)
        out.reply(reply, ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0, None))

    def _remove_records(self, group: ConsumerGroup, member_id: str, out: ResultBuilder) -> None:
        out.record(ConsumerCurrentRecord(group.group_id, member_id, None))
        out.record(ConsumerTargetRecord(group.group_id, member_id, None))
        out.record(ConsumerMemberRecord(group.group_id, member_id, None))
        self._cancel_timers(group.group_id, member_id, out)

    def _cancel_timers(self, group_id: str, member_id: str, out: ResultBuilder) -> None:
        """Stage the cancelling of a member's session and revocation timers."""
        out.then(self.timers.cancel, consumer_session_key(group_id, member_id))
        out.then(self.timers.cancel, consumer_revoke_key(group_id, member_id))

    def fence(self, group: ConsumerGroup, member_ids: list[str], out: ResultBuilder, now_ms: int) -> None:
        """Remove members and bump the group epoch so the others get their partitions.

        If that leaves only classic-protocol members, the group turns classic again.
        """
        if self.downgrade.maybe_downgrade(group, member_ids, out, now_ms):
            return
        for member_id in member_ids:
            self._remove_records(group, member_id, out)
        remaining = {mid: m for mid, m in group.members.items() if mid not in member_ids}
        out.record(ConsumerGroupEpochRecord(group.group_id, group.epoch + 1, self._subscribed_metadata(remaining)))

    def bump_epoch(self, group: ConsumerGroup, out: ResultBuilder) -> None:
        """A new group epoch with nothing else changed: the assignor runs again at the next
        heartbeat and every member reconciles to the new epoch (a rebalance on demand)."""
        out.record(ConsumerGroupEpochRecord(group.group_id, group.epoch + 1, self._subscribed_metadata(group.members)))

    def session_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.consumer_groups.get(op.group_id)
        if group is None or op.member_id not in group.members:
            return EMPTY_RESULT
        out = ResultBuilder()
        out.changed(group.group_id, "session timeout", Departure.EXPIRED)
        self.fence(group, [op.member_id], out, now_ms)
        return out.build()

    def revoke_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.consumer_groups.get(op.group_id)
        member = group.members.get(op.member_id) if group else None
        if (member is None or member.state is not MemberState.UNREVOKED_PARTITIONS
                or member.epoch != op.generation):
            return EMPTY_RESULT
        out = ResultBuilder()
        out.changed(group.group_id, "revocation timeout", Departure.FENCED)
        self.fence(group, [op.member_id], out, now_ms)   # it never gave the partitions back
        return out.build()

    # ---- topics ---------------------------------------------------------------------------

    def topics_changed(self, now_ms: int) -> Result:
        """Bump the epoch of every group whose subscribed topics' metadata changed."""
        out = ResultBuilder()
        for group_id in sorted(self.shard.consumer_groups):
            group = self.shard.consumer_groups[group_id]
            subscribed = self._subscribed_metadata(group.members)
            if subscribed != group.subscribed:
                out.record(ConsumerGroupEpochRecord(group_id, group.epoch + 1, subscribed))
                out.changed(group_id, "topic metadata changed")
        return out.build()

    # ---- describe -------------------------------------------------------------------------

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        described = []
        for group_id in group_ids:
            group = self.shard.consumer_groups.get(group_id)
            if group is None:
                message = f"Group {group_id} is not a consumer group." if group_id in self.shard.streams_groups \
                    else None
                described.append(DescribedConsumerGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message=message))
                continue
            described.append(DescribedConsumerGroup(
                group_id, ErrorCode.NONE, group.state().value, group.epoch, group.target_epoch, self.assignor_of(group),
                tuple(DescribedConsumerMember(
                    m.member_id, m.meta.instance_id, m.meta.rack_id, m.epoch, m.meta.client_id,
                    m.meta.client_host, m.meta.subscribed_topic_names, m.meta.subscribed_topic_regex,
                    m.current.assigned, group.target.get(m.member_id, ()), 0 if m.meta.is_classic else 1)
                    for m in group.members.values())))
        return Result((), ((reply, tuple(described)),))

    def assignor_of(self, group: ConsumerGroup) -> str:
        """The server assignor the group's members ask for most (the default if none asks)."""
        votes = Counter(m.meta.server_assignor for m in group.members.values() if m.meta.server_assignor)
        return votes.most_common(1)[0][0] if votes else self.config.consumer_assignors[0]

    def loaded(self, now_ms: int) -> None:
        """After a restart every member gets a fresh session to come back in."""
        for group_id, group in self.shard.consumer_groups.items():
            for member_id, member in group.members.items():
                session = (member.meta.classic_session_timeout_ms if member.meta.is_classic
                           else self.group_configs.consumer_session_timeout(group_id))
                self.timers.schedule(consumer_session_key(group_id, member_id), now_ms + session,
                                     TimerOp(TimerKind.CONSUMER_SESSION, group_id, member_id))


def _subset(owned: Partitions, assigned: Partitions) -> bool:
    mine = as_dict(assigned)
    return all(set(ps) <= mine.get(t, set()) for t, ps in owned)
