"""The heartbeat of the modern group kinds, written once: member epochs, the group epoch,
the target assignment, sessions (KIP-848's shape, which KIP-932 and KIP-1071 share).

How this works (numbered steps in `heartbeat_in` and `step`): validate (the kind's rules);
find or create the group and the member (the join epoch joins, a leave epoch leaves, any
other epoch must be the member's: `member_for`, the kind's check); fold the request into
the member's metadata (`merge`); recompute what the group subscribes to and bump the group
epoch if anything the assignment depends on changed; if the group epoch is ahead of the
target, run the kind's assignor (`assign`); move the member one step towards its target
(`next_current`: a consumer member reconciles, a share member takes its target); re-arm its
session (`arm_timers`); answer (`answer`). A new group starts at epoch 1, as Kafka 4.4's
(its first member joins at epoch 2, keeping 1 distinct from "no epoch").

Topics a member newly subscribes to may not count at once (`settle`, the kind's): Kafka
resolves a new regular expression, and initializes a share group's new share partitions,
in the background. The kind leaves them out of that heartbeat's subscribed metadata and
stages a timer at once (`recount`), which bumps the group epoch with them in. Everything durable comes out as the kind's
records, which replay (modern_group.ModernGroup.apply) applies; timers are staged on the
ResultBuilder (`then`) and armed only when the whole request succeeded, so a request that
raises at any step changes nothing.

Removing members (a leave, a session that ran out, a fence) writes the member's current,
target and member tombstones and a new group epoch, so the rest get their partitions. A
change of the broker's topics bumps the epoch of every group whose subscribed metadata
moved. After a restart each member gets a fresh session (`loaded`).

A kind is a subclass that names its group class (with its records), its session timer, and
fills in the hooks marked "the kind's" below; consumer_protocol.py and share_protocol.py are
two. streams_protocol.py is the third for sessions, member removal, deletion, reloads and
the control API's moves, and keeps a heartbeat of its own (the topology comes first there:
its validation, the internal topics, the initial rebalance delay). Steps 4 and 5 (`_group_epoch`, `_target`) and the removal are the same for
every kind and are not meant to be overridden.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter, is_
from typing import Any, Callable, ClassVar

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.modern_group import ModernGroup, SubscribedTopics
from kgroup.core.records import OffsetCommitRecord
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import TimerKind, TimerOp


# A member's metadata, read at C speed over whole groups (here and by the kinds' protocols).
META_OF = attrgetter("meta")


def may_assign(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Whether a new target assignment may be computed at `now_ms` (KIP-1263): at once when
    none was computed since the group started or emptied (`last_ms` 0) or without an
    interval, else once `interval_ms` has passed since the last."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms


@dataclass(frozen=True, slots=True)
class HeartbeatStep:
    """What one heartbeat's step did to its member (`ModernProtocol.step`)."""

    member_id: str
    before: Any                     # the member's current value before
    after: Any                      # and after the step
    replaced: Any                   # a static member whose place it took, or None


@dataclass(frozen=True, slots=True)
class Joined:
    """Steps 2-3: the member as the request leaves it (not yet replayed)."""

    member_id: str
    member: Any                     # with its current value before the step
    old_meta: Any                   # None: a new member
    meta: Any
    replaced: Any                   # a static member whose place it takes, or None

    @property
    def before(self) -> Any:
        """The member's metadata before this request: its own, else that of the static
        member it replaces; None for a member new to the group."""
        if self.old_meta is not None:
            return self.old_meta
        return self.replaced.meta if self.replaced is not None else None

    def members_of(self, group: ModernGroup) -> dict[str, Any]:
        """The group's members once this one is in (and the one it replaced is out)."""
        members = dict(group.members)
        if self.replaced is not None:
            members.pop(self.replaced.member_id, None)
        members[self.member_id] = type(self.member)(self.member_id, self.meta, self.member.current)
        return members


class ModernProtocol:
    """Handlers of one modern kind over one shard's state."""

    # ---- what a kind says -------------------------------------------------------------------

    GROUP: ClassVar[type[ModernGroup]]
    API: ClassVar[str]                          # the heartbeat's name, as group changes name it
    MEMBER_ID_PREFIX: ClassVar[str] = "member"  # of a member id the coordinator makes up
    JOIN_EPOCH: ClassVar[int] = 0
    LEAVE_EPOCHS: ClassVar[tuple[int, ...]] = (-1,)
    NEW_GROUP_EPOCH: ClassVar[int] = 1
    SESSION_TIMER: ClassVar[TimerKind]
    session_key: ClassVar[Callable[[str, str], tuple]]

    def __init__(self, shard: ShardState, groups: dict[str, Any]) -> None:
        self.shard = shard
        self.config = shard.config
        self.timers = shard.timers
        self.groups = groups
        self.records = self.GROUP.RECORDS

    def validate(self, req: Any) -> None:
        """The kind's: raise unless the request is well formed (step 1; nothing about the group)."""
        raise NotImplementedError

    def member_for(self, group: ModernGroup, req: Any, member_id: str) -> tuple[Any, Any]:
        """The kind's: (the member, or None if new; a static member it replaces, or None),
        after checking the request's epoch against the member's."""
        raise NotImplementedError

    def merge(self, old: Any, req: Any, extra: Any) -> Any:
        """The kind's: the member's metadata with the request folded in (`old` None: new)."""
        raise NotImplementedError

    def subscription(self, meta: Any) -> Any:
        """The kind's: what in a member's metadata the assignment depends on (hashable; the
        kind's `topics_of` reads nothing else)."""
        raise NotImplementedError

    def topics_of(self, meta: Any, group: ModernGroup) -> set[str]:
        """The kind's: names of existing topics a member of `group` subscribes to."""
        raise NotImplementedError

    def max_size(self) -> int:
        raise NotImplementedError

    def assign(self, group: ModernGroup, members: dict[str, Any], targets: dict[str, Any],
               subscribed: SubscribedTopics, out: ResultBuilder) -> dict[str, Any]:
        """The kind's: a new target for every member; records the targets that change."""
        raise NotImplementedError

    def next_current(self, group: ModernGroup, joined: Joined, req: Any, targets: dict[str, Any],
                     target_epoch: int, out: ResultBuilder, extra: Any) -> Any:
        """The kind's: step 6, the member's next current value (recorded if it changed)."""
        raise NotImplementedError

    def answer(self, group: ModernGroup, req: Any, reply: ReplyTo, done: HeartbeatStep, out: ResultBuilder) -> None:
        """The kind's: step 8, the heartbeat's response."""
        raise NotImplementedError

    def left(self, group: ModernGroup, member: Any, req: Any, reply: ReplyTo, now_ms: int,
             out: ResultBuilder) -> None:
        """The kind's: a member sent a leave epoch (it is known to be in the group)."""
        raise NotImplementedError

    def session_timeout(self, group_id: str, meta: Any) -> int:
        """The kind's: how long a member's session runs from a heartbeat."""
        raise NotImplementedError

    def settle(self, group: ModernGroup, joined: Joined, subscribed: SubscribedTopics, bump: bool,
               now_ms: int, out: ResultBuilder) -> tuple[SubscribedTopics, bool]:
        """The kind's, optional: (what the group subscribes to, whether the epoch moves) once
        topics that cannot count yet are held back (a timer at once counts them: `recount`)."""
        return subscribed, bump

    # ======================================================================================
    # The heartbeat
    # ======================================================================================

    def heartbeat(self, req: Any, reply: ReplyTo, now_ms: int) -> Result:
        """Handle one heartbeat for a group of this kind, or a group that does not exist."""
        # 1. Validate the request as a whole.
        self.validate(req)
        group = self.groups.get(req.group_id)
        if group is not None:
            steady = self.steady(group, req, reply, now_ms)
            if steady is not None:
                return steady
        return self.heartbeat_in(group, req, reply, now_ms, ResultBuilder(EventJournal(self.shard, now_ms)))

    def steady(self, group: ModernGroup, req: Any, reply: ReplyTo, now_ms: int) -> Result | None:
        """The kind's, optional: the answer to a heartbeat that can change nothing but its
        member's session deadline, without steps 2-8 (None: take them). Most heartbeats of
        a settled group are such; an answer here must be exactly the steps' own."""
        return None

    def heartbeat_in(self, group: ModernGroup | None, req: Any, reply: ReplyTo, now_ms: int,
                     out: ResultBuilder) -> Result:
        """Steps 2-8 of a validated heartbeat on `group` (None: none yet), adding to `out`,
        which may already hold the records that made the group (an upgrade from classic)."""
        if group is None:
            if req.member_epoch != self.JOIN_EPOCH:
                # Only a join (epoch 0) makes a group; Kafka answers anything else so.
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {req.group_id} does not exist")
            group = self.GROUP(req.group_id, epoch=self.NEW_GROUP_EPOCH)
        if req.member_epoch in self.LEAVE_EPOCHS:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {group.group_id}")
            self.left(group, member, req, reply, now_ms, out)
        else:
            self.answer(group, req, reply, self.step(group, req, now_ms, out), out)
        if out.records:
            # A steady heartbeat writes nothing and changes no group: not worth a look.
            out.changed(group.group_id, self.API)
        return out.build()

    def step(self, group: ModernGroup, req: Any, now_ms: int, out: ResultBuilder, extra: Any = None) -> HeartbeatStep:
        """Steps 2-7 of a heartbeat that joins or stays: the member's step towards its target.
        `extra` is the kind's (handed to `merge` and `next_current`)."""
        joined = self._join_member(group, req, out, extra)                          # 2, 3
        subscribed, epoch = self._group_epoch(group, joined, now_ms, out)           # 4
        targets, target_epoch = self._target(group, joined, subscribed, epoch, out, now_ms)  # 5
        nxt = self.next_current(group, joined, req, targets, target_epoch, out, extra)  # 6
        self.arm_timers(group, joined, nxt, now_ms, out)                             # 7
        return HeartbeatStep(joined.member_id, joined.member.current, nxt, joined.replaced)

    def _join_member(self, group: ModernGroup, req: Any, out: ResultBuilder, extra: Any) -> Joined:
        # 2. Find or create the member, checking its epoch.
        member_id = req.member_id or self.shard.new_member_id(req.client_id or self.MEMBER_ID_PREFIX)
        member, replaced = self.member_for(group, req, member_id)
        # 3. Fold the request into the member's metadata.
        old_meta = member.meta if member is not None else None
        meta = self.merge(old_meta, req, extra)
        if member is None:
            if len(group.members) >= self.max_size():
                raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"group {group.group_id} is full")
            member = self.GROUP.MEMBER(member_id, meta,
                                       replaced.current if replaced is not None else self.GROUP.NEW_CURRENT)
        if replaced is not None:
            self._remove_records(group, replaced.member_id, out)
        if replaced is not None or (meta is not old_meta and meta != old_meta):
            out.record(self.records.member(group.group_id, member_id, meta))
        return Joined(member_id, member, old_meta, meta, replaced)

    def _group_epoch(self, group: ModernGroup, joined: Joined, now_ms: int,
                     out: ResultBuilder) -> tuple[SubscribedTopics, int]:
        # 4. What the group subscribes to now, and whether the assignment must be redone.
        #    Only a join, a replacement or a changed subscription can change it: a steady
        #    heartbeat must not cost work proportional to the group's size.
        old_meta, meta, replaced = joined.old_meta, joined.meta, joined.replaced
        is_new_group = group.group_id not in self.groups
        old_subscribed = group.subscribed
        resubscribed = old_meta is not None and self.subscription(old_meta) != self.subscription(meta)
        if old_meta is None or replaced is not None or is_new_group or resubscribed:
            subscribed = self.subscribed_metadata(joined.members_of(group), group, remember=True)
        else:
            subscribed = old_subscribed
        bump = (old_meta is None and replaced is None) or subscribed != old_subscribed or resubscribed
        if replaced is not None and self.subscription(replaced.meta) != self.subscription(meta):
            bump = True
        if replaced is not None and joined.member_id in group.members:
            # A member still in the group takes a departed static member's place under its own
            # id: its previous self leaves, and the target partitions it had would belong to no
            # one until some later epoch (Kafka 4.4 leaves them so): a member left, so the epoch moves.
            bump = True
        subscribed, bump = self.settle(group, joined, subscribed, bump, now_ms, out)
        epoch = group.epoch
        if bump:
            epoch = group.epoch + 1
            out.record(self.records.epoch(group.group_id, epoch, subscribed))
        elif is_new_group:
            out.record(self.records.epoch(group.group_id, epoch, subscribed))
        return subscribed, epoch

    def _target(self, group: ModernGroup, joined: Joined, subscribed: SubscribedTopics, epoch: int,
                out: ResultBuilder, now_ms: int) -> tuple[dict[str, Any], int]:
        # 5. A new target assignment when the group epoch is ahead of it, at most once per
        #    assignment interval (KIP-1263): within it the member walks towards the last
        #    target (a new member: nothing, at that target's epoch), and a later heartbeat
        #    computes the target of whatever epoch the group has reached by then.
        target_epoch = group.target_epoch
        # Read only (the kind's next_current and assign only read it): copied when changed,
        # so a steady heartbeat costs no copy of the group's targets.
        targets = group.target
        replaced, member_id = joined.replaced, joined.member_id
        if replaced is not None and replaced.member_id in targets:
            targets = dict(targets)
            targets[member_id] = targets.pop(replaced.member_id)
            out.record(self.records.target(group.group_id, member_id, targets[member_id]))
        if epoch <= target_epoch:
            return targets, target_epoch     # a steady heartbeat: not even a config look-up
        interval = self.assignment_interval(group.group_id)
        if may_assign(group.target_timestamp, interval, now_ms):
            targets = self.assign(group, joined.members_of(group), targets, subscribed, out)
            target_epoch = epoch
            # Stamped when an interval applies (never 0, which means "at once").
            stamp = (max(now_ms, 1),) if interval else ()
            out.record(self.records.target_epoch(group.group_id, target_epoch, *stamp))
        return targets, target_epoch

    def assignment_interval(self, group_id: str) -> int:
        """The kind's, optional: the least time between two target assignments (KIP-1263's
        `<kind>.assignment.interval.ms`); 0 assigns at every change."""
        return 0

    def subscribed_metadata(self, members: dict[str, Any], group: ModernGroup,
                            remember: bool = False) -> SubscribedTopics:
        """What `members` of `group` subscribe to: (name, topic id, partitions) of each
        existing topic. With `remember` (`members` being its members and maybe a joiner after
        them), what the last such call over the same members found is kept on the group and
        reused (a kind drops it when what its `topics_of` reads of the group changes)."""
        # Once per distinct subscription, not per member: this runs at every join, and
        # members mostly share one (the members' `subscription` keys read at C speed when
        # the kind's `subscription` is an attrgetter).
        metas = list(map(META_OF, members.values()))
        topics = self.shard.topics
        kept = group.subscription_inputs if remember else None
        # The same members in the same order with the same metadata (by identity) under the
        # same topics: only the members after them (a joiner) are looked at.
        if kept is not None and kept[0] is topics and len(metas) >= len(kept[1]) \
                and all(map(is_, metas, kept[1])):
            keys, names, new = kept[2], kept[3], metas[len(kept[1]):]
        else:
            keys, names, new = frozenset(), frozenset(), metas
        distinct = dict(zip(map(self.subscription, new), new))
        if not distinct.keys() <= keys:
            names = set(names)
            for key, meta in distinct.items():
                if key not in keys:
                    names |= self.topics_of(meta, group)
            keys, names = keys.union(distinct), frozenset(names)
        if remember:
            group.subscription_inputs = (topics, metas, keys, names)
        return tuple(sorted((n, *topics[n]) for n in names))

    # ---- sessions -------------------------------------------------------------------------

    def arm_timers(self, group: ModernGroup, joined: Joined, nxt: Any, now_ms: int, out: ResultBuilder) -> None:
        """Step 7: the session runs from this heartbeat (a kind may arm more)."""
        self.arm_session(group.group_id, joined.member_id,
                         now_ms + self.session_timeout(group.group_id, joined.meta), out)

    def arm_session(self, group_id: str, member_id: str, deadline_ms: int, out: ResultBuilder) -> None:
        """Stage the member's session timer to run out at `deadline_ms`."""
        out.then(self._session, group_id, member_id, deadline_ms)

    def _session(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        key = self.session_key(group_id, member_id)
        # The usual heartbeat moves an armed session on, keeping its operation.
        if not self.timers.extend(key, deadline_ms):
            self.timers.schedule(key, deadline_ms, TimerOp(self.SESSION_TIMER, group_id, member_id))

    def cancel_timers(self, group_id: str, member_id: str, out: ResultBuilder) -> None:
        """Stage the cancelling of a member's timers (a kind may have more than the session)."""
        out.then(self.timers.cancel, self.session_key(group_id, member_id))

    def session_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.groups.get(op.group_id)
        if group is None or op.member_id not in group.members:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "session timeout", Departure.EXPIRED)
        self.remove_members(group, [op.member_id], out, now_ms)
        return out.build()

    def loaded(self, now_ms: int) -> None:
        """After a restart every member gets a fresh session to come back in."""
        for group_id, group in self.groups.items():
            for member_id, member in group.members.items():
                self.timers.schedule(self.session_key(group_id, member_id),
                                     now_ms + self.session_timeout(group_id, member.meta),
                                     TimerOp(self.SESSION_TIMER, group_id, member_id))

    # ---- members leaving ------------------------------------------------------------------

    def _remove_records(self, group: ModernGroup, member_id: str, out: ResultBuilder) -> None:
        records = self.records
        out.record(records.current(group.group_id, member_id, None))
        out.record(records.target(group.group_id, member_id, None))
        out.record(records.member(group.group_id, member_id, None))
        self.cancel_timers(group.group_id, member_id, out)

    def remove_members(self, group: ModernGroup, member_ids: list[str], out: ResultBuilder, now_ms: int) -> None:
        """Remove members and bump the group epoch so the others get their partitions."""
        for member_id in member_ids:
            self._remove_records(group, member_id, out)
        remaining = {mid: m for mid, m in group.members.items() if mid not in member_ids}
        out.record(group.epoch_record(group.epoch + 1, self.subscribed_after(group, remaining)))
        if not remaining:
            # Nobody is left to assign to: the (empty) target is of the new epoch at once.
            out.record(self.records.target_epoch(group.group_id, group.epoch + 1))

    def delete_group(self, group: ModernGroup, out: ResultBuilder, now_ms: int) -> None:
        """DeleteGroups of an empty group: its offsets, the kind's own progress, then the group."""
        for topic, partition in sorted(self.shard.stored.offsets.get(group.group_id, {})):
            out.record(OffsetCommitRecord(group.group_id, topic, partition, None))
        self.delete_progress(group, out)
        self._remove_group_records(group, out)

    def _remove_group_records(self, group: ModernGroup, out: ResultBuilder) -> None:
        """The group's own records go (after its members'): it is gone."""
        out.record(self.records.target_epoch(group.group_id, None))
        out.record(self.records.epoch(group.group_id, None))

    def delete_progress(self, group: ModernGroup, out: ResultBuilder) -> None:
        """The kind's: what of its own a deleted group leaves behind (nothing by default)."""

    def bump_epoch(self, group: ModernGroup, out: ResultBuilder) -> None:
        """A new group epoch with nothing else changed: the assignor runs again at the next
        heartbeat and every member moves to the new epoch (a rebalance on demand)."""
        out.record(group.epoch_record(group.epoch + 1, self.subscribed_after(group, group.members)))

    def subscribed_after(self, group: ModernGroup, members: dict[str, Any]) -> SubscribedTopics:
        """What `group` subscribes to with `members` only (a kind whose subscription is the
        group's, not its members', keeps the group's)."""
        return self.subscribed_metadata(members, group)

    # ---- topics ---------------------------------------------------------------------------

    def recount(self, op: TimerOp, now_ms: int, why: str) -> Result:
        """Topics `settle` held back can count now: bump the group epoch if what the group
        subscribes to changed (Kafka compares the subscribed topics' metadata hash)."""
        group = self.groups.get(op.group_id)
        if group is None:
            return EMPTY_RESULT
        subscribed = self.subscribed_metadata(group.members, group)
        if subscribed == group.subscribed:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.record(self.records.epoch(group.group_id, group.epoch + 1, subscribed))
        out.changed(group.group_id, why)
        return out.build()

    def topics_changed(self, now_ms: int) -> Result:
        """Bump the epoch of every group whose subscribed topics' metadata changed."""
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        for group_id in sorted(self.groups):
            group = self.groups[group_id]
            subscribed = self.subscribed_metadata(group.members, group)
            if subscribed != group.subscribed:
                out.changed(group_id, "topic metadata changed")
                out.record(self.records.epoch(group_id, group.epoch + 1, subscribed))
        return out.build()
