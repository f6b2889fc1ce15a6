"""ConsumerGroupHeartbeat: the consumer protocol's one request, and its timers (KIP-848).

How this works: the steps every modern kind shares (find or create the group and the
member, bump the group epoch, compute the target, arm the session, remove members) are
modern_protocol.py's; this module fills in the consumer protocol's: validation; the epoch
check (epoch 0 joins, -1 leaves, -2 is a static member leaving for a moment; a static
member's new id takes its old one's place); the metadata (topic names or a regex, the
server assignor); the server assignor the members vote for; one reconciliation step towards
the target (consumer_group.reconcile), with the rebalance timeout armed while the member
owes a revocation; and the answer, with its epoch and, when it changed or was asked for in
full, its assignment.

A member subscribed by regular expression counts only the topics its group last resolved
the regex to (`ConsumerGroup.regexes`, durable as ConsumerRegexRecords), as in Kafka 4.4:
a group's regexes are resolved in the background (here a timer at once), one resolution at
a time and at most once per 10 s. After that, a heartbeat starts one if a member brought a
regex not resolved yet, topics were created since the last, or the last is older than the
refresh interval (10 min). A resolution records every subscribed regex with what it
matches now and bumps the group epoch if any of them matches something else, or the
group's subscribed topics changed. A heartbeat that switches to a regex the group has
resolved, or drops its regex, bumps at once; one bringing a new regex waits for its
resolution (a second new regex within 10 s of the last resolution waits for a heartbeat
after them). A regex goes (a tombstone) with its last member.

These handlers see consumer groups (and "no group yet"); the coordinator routes a
heartbeat for a classic group to migration.py, which converts it into records and hands
the result to `heartbeat_in`. Removing members may turn a group classic again: that is the
injected `Downgrade`'s business.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import and_, attrgetter, is_, itemgetter, ne, not_, or_
from typing import TYPE_CHECKING, Any

from kgroup.assignors import (
    GroupSpec, JoinFollower, MemberSpec, ServerAssignor, UnknownAssignor, get_server_assignor,
)
from kgroup.core.assignment_epochs import at_epoch, stamp
from kgroup.core.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    NEW_MEMBER,
    as_dict,
    as_tuple,
    preferred_assignor,
    reconcile,
)
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.group_configs import CONSUMER_ASSIGNMENT_INTERVAL, GroupConfigs
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
    ConsumerMemberValue,
    ConsumerRegexRecord,
    ConsumerTargetRecord,
    Partitions,
    ResolvedRegex,
)
from kgroup.core.modern_group import SubscribedTopics
from kgroup.core.modern_protocol import META_OF, HeartbeatStep, Joined, ModernProtocol
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import TimerKind, TimerOp, consumer_regex_key, consumer_revoke_key, consumer_session_key
from kgroup.core.topic_regex import InvalidRegex, full_matcher, regex_topics

if TYPE_CHECKING:
    from kgroup.core.migration import Downgrade

# (JoinGroup protocols, session timeout) of a classic member inside a consumer group.
ClassicJoin = tuple[tuple[tuple[str, bytes], ...], int]


class ConsumerProtocol(ModernProtocol):
    GROUP = ConsumerGroup
    API = "ConsumerGroupHeartbeat"
    MEMBER_ID_PREFIX = "consumer"
    LEAVE_EPOCHS = (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    SESSION_TIMER = TimerKind.CONSUMER_SESSION
    session_key = staticmethod(consumer_session_key)

    def __init__(self, shard: ShardState, downgrade: Downgrade) -> None:
        super().__init__(shard, shard.consumer_groups)
        # Session timeout and heartbeat interval per group: dynamic, TOML override, default.
        self.group_configs = GroupConfigs(shard)
        self.downgrade = downgrade
        # group id -> the regexes its armed resolution resolves (what Kafka hands its
        # executor). Not durable: a resolution lost with a restart is asked for again.
        self._resolving: dict[str, frozenset[str]] = {}

    # ======================================================================================
    # ConsumerGroupHeartbeat: the kind's parts of modern_protocol.py's steps
    # ======================================================================================

    def step(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, now_ms: int, out: ResultBuilder,
             classic: ClassicJoin | None = None) -> HeartbeatStep:
        """Steps 2-7 of a heartbeat that joins or stays: the member's reconciliation step.

        `classic` carries a classic member's (JoinGroup protocols, session timeout): its join
        already shows what it gave up, so what it reports owning is taken as the truth.
        """
        return super().step(group, req, now_ms, out, classic)

    def answer(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo,
               done: HeartbeatStep, out: ResultBuilder) -> None:
        # 8. Answer; the assignment only when it changed or was asked for in full.
        full = req.member_epoch == JOIN_EPOCH or (
            req.rebalance_timeout_ms != -1 and req.owned is not None
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
        after = done.after
        # Kafka: when asked in full, or when the assigned partitions changed (a new epoch
        # alone is not sent).
        changed = after.assigned != done.before.assigned
        out.reply(reply, ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, None, done.member_id, after.member_epoch,
            self.group_configs.consumer_heartbeat_interval(group.group_id), after.assigned if (full or changed) else None))

    def steady(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, reply: ReplyTo,
               now_ms: int) -> Result | None:
        """A settled member's heartbeat: known, at its own epoch, which is the group's and
        its target's, STABLE, nothing in the request that its metadata lacks, no revocation
        timer. Then every step keeps what is: `member_for` finds it (a static member by an
        instance id that is its own, which no other member holds), `merge` keeps its metadata,
        the group epoch and the target stay, `reconcile` keeps a STABLE member at the target
        epoch whatever it reports owning, and the answer carries no assignment (not asked in
        full: no rebalance timeout; nothing changed). Only the session moves on. This is most
        of a settled group's traffic, and it skips building the steps' objects for it
        (tests/unit/core/test_consumer_steady_heartbeat.py holds it to the steps' answers)."""
        member = group.members.get(req.member_id)
        if member is None:
            return None
        current, epoch = member.current, req.member_epoch
        if (epoch <= JOIN_EPOCH or epoch != current.member_epoch or current.state is not MemberState.STABLE
                or epoch != group.target_epoch or epoch != group.epoch or not _keeps_metadata(member.meta, req)):
            return None
        group_id, member_id = group.group_id, member.member_id
        if consumer_revoke_key(group_id, member_id) in self.timers:
            return None              # step 7 would cancel it: a change, left to the steps
        configs = self.group_configs
        response = ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, member_id, epoch,
                                                  configs.consumer_heartbeat_interval(group_id), None)
        # Last, as the steps arm them at build(): nothing above changed anything.
        if group.regex_counts:
            regexes = self._refresh_due(group, None, None, False, now_ms)
            if regexes:
                self._arm_resolution(group_id, regexes, now_ms)
        self._session(group_id, member_id, now_ms + configs.consumer_session_timeout(group_id))
        return Result((), ((reply, response),)) if reply is not None else EMPTY_RESULT

    def assignment_interval(self, group_id: str) -> int:
        return self.group_configs.int_value(group_id, CONSUMER_ASSIGNMENT_INTERVAL)

    def next_current(self, group: ConsumerGroup, joined: Joined, req: ConsumerGroupHeartbeatRequest,
                     targets: dict[str, Partitions], target_epoch: int, out: ResultBuilder,
                     classic: ClassicJoin | None) -> ConsumerCurrentValue:
        # 6. One reconciliation step for this member.
        member_id, member, replaced = joined.member_id, joined.member, joined.replaced
        owners = group.owners
        if replaced is not None:
            owners = {k: (member_id if v == replaced.member_id else v) for k, v in owners.items()}
        current = member.current
        if replaced is not None or (req.member_epoch == JOIN_EPOCH and current.member_epoch == STATIC_LEAVE_EPOCH):
            # A static member taking a departed one's place (or its own, under the same id)
            # starts from its assignment at epoch 0, as Kafka copies the member. A rejoin
            # (epoch 0) of a known member is not reset: the partitions its join reports not
            # owning (all of them) need no revocation step.
            current = replace(current, member_epoch=0, previous_member_epoch=0)
        if classic is not None and req.owned is not None and current is not NEW_MEMBER:
            # A classic member revokes before it rejoins: what it no longer reports is released.
            # (An eager member reports nothing: it gave everything up.) Then recompute in full,
            # as for a member waiting on unreleased partitions.
            still = as_dict(req.owned)
            current = stamp(ConsumerCurrentValue(
                current.member_epoch, current.previous_member_epoch, MemberState.UNRELEASED_PARTITIONS,
                as_tuple({t: set(ps) & still.get(t, set()) for t, ps in current.assigned}), ()), current)
        topics = self.shard.topics
        subscribed = frozenset(topics[n][0] for n in self.topics_of(joined.meta, group))
        nxt = reconcile(member_id, current, targets.get(member_id, ()), target_epoch, owners, req.owned,
                        subscribed, self._resubscribed(joined))
        if nxt != member.current or replaced is not None or member_id not in group.members:
            out.record(ConsumerCurrentRecord(group.group_id, member_id, nxt))
        return nxt

    def arm_timers(self, group: ConsumerGroup, joined: Joined, nxt: ConsumerCurrentValue, now_ms: int,
                   out: ResultBuilder) -> None:
        # 7. Timers: the session always; the rebalance timeout while a revocation is owed.
        super().arm_timers(group, joined, nxt, now_ms, out)
        group_id, member_id, meta, before = group.group_id, joined.member_id, joined.meta, joined.member.current
        revoke = consumer_revoke_key(group_id, member_id)
        if nxt.state is MemberState.UNREVOKED_PARTITIONS:
            if (before.state is not MemberState.UNREVOKED_PARTITIONS
                    or nxt.pending_revocation != before.pending_revocation):
                out.then(self.timers.schedule, revoke, now_ms + meta.rebalance_timeout_ms,
                         TimerOp(TimerKind.CONSUMER_REVOKE, group_id, member_id, generation=nxt.member_epoch))
        elif revoke in self.timers:
            out.then(self.timers.cancel, revoke)

    def session_timeout(self, group_id: str, meta: ConsumerMemberValue) -> int:
        # A classic member inside a consumer group keeps the session its JoinGroup asked for.
        return (meta.classic_session_timeout_ms if meta.is_classic
                else self.group_configs.consumer_session_timeout(group_id))

    def max_size(self) -> int:
        return self.config.consumer_max_size

    def validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Raise unless the request is well formed (step 1; nothing about the group yet)."""
        def invalid(why: str) -> GroupError:
            return GroupError(ErrorCode.INVALID_REQUEST, why)

        if not req.group_id:
            raise invalid("GroupId can't be empty")
        if req.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if req.rack_id == "":
            raise invalid("RackId can't be empty.")
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
                full_matcher(req.subscribed_topic_regex)
            except InvalidRegex as exc:
                raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex {req.subscribed_topic_regex!r} is invalid: {exc}") from None
        if req.server_assignor is not None and req.server_assignor not in self.config.consumer_assignors:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported; "
                             f"supported: {', '.join(self.config.consumer_assignors)}")

    def member_for(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest,
                   member_id: str) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember | None]:
        """(the member, or None if new; a static member it replaces, or None)."""
        static = group.static_member(req.instance_id)
        if req.member_epoch == JOIN_EPOCH:
            if (static is not None and static.member_id == member_id and static.epoch != STATIC_LEAVE_EPOCH
                    and not static.meta.is_classic):
                # Kafka 4.4 refuses a consumer-protocol static member's rejoin while its
                # instance has not left (-2), even under the same member id (after a fence).
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"static member {req.instance_id} is still in use by {static.member_id}")
            if static is not None and static.member_id != member_id:
                if static.epoch != STATIC_LEAVE_EPOCH:
                    raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"static member {req.instance_id} is still in use by {static.member_id}")
                return None, static
            return group.members.get(member_id), None
        if req.instance_id is not None:
            # A static member is found by its instance id: another member id holding it is
            # fenced (the old incarnation of a restarted instance), as in Kafka.
            member = static
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"instance {req.instance_id} is not in group "
                                                              f"{group.group_id}")
            if member.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"instance {req.instance_id} is not {member_id}'s")
        else:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group.group_id}")
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

    def merge(self, old: ConsumerMemberValue | None, req: ConsumerGroupHeartbeatRequest,
              classic: ClassicJoin | None) -> ConsumerMemberValue:
        if old is not None and classic is None and _keeps_metadata(old, req):
            # A steady heartbeat (group, member and epoch only) leaves the metadata as it was;
            # the general fold below would build an equal value at ~5% of the heartbeat's CPU.
            return old
        return self._merged(old, req, classic)

    @staticmethod
    def _merged(old: ConsumerMemberValue | None, req: ConsumerGroupHeartbeatRequest,
                classic: ClassicJoin | None) -> ConsumerMemberValue:
        def pick(new, previous, default):
            if new is not None:
                return new
            return previous if old is not None else default

        meta = ConsumerMemberValue(
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
        if classic is not None:
            meta = replace(meta, classic_protocols=classic[0], classic_session_timeout_ms=classic[1])
        return meta

    # (topic names, regex), read at C speed: the group's subscribed topics are worked out per
    # distinct subscription at every join. A member's server assignor is not part of it: a
    # change moves the epoch only if it changes the group's preferred assignor (`settle`).
    subscription = staticmethod(attrgetter("subscribed_topic_names", "subscribed_topic_regex"))

    # ---- regular expressions, resolved in batches as Kafka 4.4 resolves them --------------

    def settle(self, group: ConsumerGroup, joined: Joined, subscribed: SubscribedTopics, bump: bool,
               now_ms: int, out: ResultBuilder) -> tuple[SubscribedTopics, bool]:
        """A member's regex counts only once the group resolved it (`group.regexes`). A
        heartbeat changing it moves the epoch only if the new one is resolved already, or the
        member gave its regex up (Kafka's REGEX_UPDATED_AND_RESOLVED); a regex new to the
        group waits for a resolution. A change of the member's server assignor moves the
        epoch when it changes the group's preferred one, as in Kafka 4.4."""
        moved = self._assignor_moved(group, joined)
        regex = joined.meta.subscribed_topic_regex or None
        before = joined.before
        old_regex = (before.subscribed_topic_regex if before is not None else None) or None
        if regex == old_regex:
            if group.regex_counts:
                self._stage_refresh(group, None, None, False, now_ms, out)
            return subscribed, bump or moved
        counts, resolved = group.regex_counts, group.regexes
        if old_regex in resolved and counts.get(old_regex) == 1:
            out.record(ConsumerRegexRecord(group.group_id, old_regex, None))      # its last member
        self._stage_refresh(group, old_regex, regex, bool(regex) and not counts.get(regex), now_ms, out)
        if regex is None or regex in resolved:
            return subscribed, True
        # The new regex counts none of its topics until it is resolved: only what else the
        # heartbeat changed moves the epoch (a subscription that lost a resolved regex's
        # topics is caught up with by the resolution, which compares the group's topics).
        names_before = before.subscribed_topic_names if before is not None else ()
        forced = joined.replaced is not None and joined.member_id in group.members
        return subscribed, names_before != joined.meta.subscribed_topic_names or moved or forced

    @staticmethod
    def _resubscribed(joined: Joined) -> bool:
        """Whether the heartbeat changed the member's topic names or its regex (Kafka's
        hasSubscriptionChanged: topic names compared as a set)."""
        before = joined.before
        if before is None:
            return bool(joined.meta.subscribed_topic_names or joined.meta.subscribed_topic_regex)
        return ((before.subscribed_topic_regex or None) != (joined.meta.subscribed_topic_regex or None)
                or set(before.subscribed_topic_names) != set(joined.meta.subscribed_topic_names))

    def _assignor_moved(self, group: ConsumerGroup, joined: Joined) -> bool:
        """Whether the heartbeat changes the group's preferred server assignor (only one that
        changes the member's own can)."""
        before = joined.before
        if (before.server_assignor if before is not None else None) == joined.meta.server_assignor:
            return False
        assignors = self.config.consumer_assignors
        return (preferred_assignor(group.members.values(), assignors)
                != preferred_assignor(joined.members_of(group).values(), assignors))

    def _stage_refresh(self, group: ConsumerGroup, old_regex: str | None, regex: str | None, required: bool,
                       now_ms: int, out: ResultBuilder) -> None:
        regexes = self._refresh_due(group, old_regex, regex, required, now_ms)
        if regexes:
            out.then(self._arm_resolution, group.group_id, regexes, now_ms)

    def _refresh_due(self, group: ConsumerGroup, old_regex: str | None, regex: str | None, required: bool,
                     now_ms: int) -> frozenset[str]:
        """The regexes to resolve after a heartbeat that moves a member from `old_regex` to
        `regex` (nothing: no resolution now). Kafka 4.4 resolves a group's regexes in the
        background, one resolution at a time and at most once per 10 s: after that, a
        heartbeat starts one if a regex is not resolved yet, topics were created since the
        last, or the last is older than the refresh interval."""
        if not required and not group.regex_counts:
            return frozenset()
        if consumer_regex_key(group.group_id) in self.timers:
            return frozenset()                           # one is under way
        last = group.last_regex_refresh_ms
        if last is not None and now_ms <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return frozenset()
        after = dict(group.regex_counts)
        if old_regex:
            after[old_regex] -= 1
            if not after[old_regex]:
                del after[old_regex]
        if regex:
            after[regex] = after.get(regex, 0) + 1
        required = (required or len(after) != len(group.regexes)
                    or group.regex_version < self.shard.new_topics_version
                    or last is None or now_ms > last + REGEX_REFRESH_INTERVAL_MS)
        return frozenset(after) if required else frozenset()

    def _arm_resolution(self, group_id: str, regexes: frozenset[str], now_ms: int) -> None:
        """Resolve `regexes` of the group just after this heartbeat (Kafka's executor)."""
        self._resolving[group_id] = regexes
        self.timers.schedule(consumer_regex_key(group_id), now_ms, TimerOp(TimerKind.CONSUMER_REGEX, group_id))

    def regex_resolved(self, op: TimerOp, now_ms: int) -> Result:
        """Resolve the regexes the heartbeat asked for against the broker's topics now: each
        still subscribed is recorded with what it matches, and the group epoch moves if what
        any of them matches changed or the group's subscribed topics did."""
        regexes = self._resolving.pop(op.group_id, frozenset())
        group = self.groups.get(op.group_id)
        if group is None:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        resolved = dict(group.regexes)
        changed = False
        for regex in sorted(regexes):
            if not group.regex_counts.get(regex):
                continue                                 # no member subscribes with it any more
            value = ResolvedRegex(tuple(sorted(regex_topics(regex, self.shard.topics))),
                                  self.shard.topics_version, now_ms)
            old = resolved.get(regex)
            changed = changed or (old.topics if old is not None else ()) != value.topics
            resolved[regex] = value
            out.record(ConsumerRegexRecord(group.group_id, regex, value))
        if not out.records:
            return EMPTY_RESULT
        subscribed = self._subscribed_with(group, resolved)
        out.changed(group.group_id, "regular expression resolved")
        if changed or subscribed != group.subscribed:
            out.record(self.records.epoch(group.group_id, group.epoch + 1, subscribed))
        return out.build()

    def _subscribed_with(self, group: ConsumerGroup, resolved: dict[str, ResolvedRegex]) -> SubscribedTopics:
        """What the group's members subscribe to with its regexes resolved as `resolved`."""
        topics = self.shard.topics
        names: set[str] = set()
        for names_of, regex in {self.subscription(m.meta) for m in group.members.values()}:
            names.update(n for n in names_of if n in topics)
            if regex and regex in resolved:
                names.update(n for n in resolved[regex].topics if n in topics)
        return tuple(sorted((n, *topics[n]) for n in names))

    def topics_of(self, meta: ConsumerMemberValue, group: ConsumerGroup) -> set[str]:
        """Names of existing topics a member of `group` subscribes to: by name, and by its
        regex as the group last resolved it (a regex not resolved yet: none)."""
        topics = self.shard.topics
        names = {n for n in meta.subscribed_topic_names if n in topics}
        resolved = group.regexes.get(meta.subscribed_topic_regex) if meta.subscribed_topic_regex else None
        if resolved is not None:
            names.update(n for n in resolved.topics if n in topics)
        return names

    def remove_members(self, group: ConsumerGroup, member_ids: list[str], out: ResultBuilder, now_ms: int) -> None:
        """Remove members and bump the group epoch so the others get their partitions; a
        resolved regex whose every member goes goes with them.

        If that leaves only classic-protocol members, the group turns classic again: every
        member's records and the group's go, and a classic group takes its place.
        """
        if not self.downgrade.wanted(group, member_ids):
            gone = Counter(r for mid in member_ids if mid in group.members
                           and (r := group.members[mid].meta.subscribed_topic_regex))
            for regex in sorted(gone):
                if regex in group.regexes and group.regex_counts.get(regex) == gone[regex]:
                    out.record(ConsumerRegexRecord(group.group_id, regex, None))
            super().remove_members(group, member_ids, out, now_ms)
            return
        for member_id in group.members:
            self._remove_records(group, member_id, out)
        self._remove_group_records(group, out)
        self.downgrade.to_classic(group, member_ids, out, now_ms)

    def _remove_group_records(self, group: ConsumerGroup, out: ResultBuilder) -> None:
        """The group's resolved regexes go before the group itself."""
        for regex in sorted(group.regexes):
            out.record(ConsumerRegexRecord(group.group_id, regex, None))
        super()._remove_group_records(group, out)

    def assign(self, group: ConsumerGroup, members: dict[str, ConsumerGroupMember], targets: dict[str, Partitions],
               subscribed: SubscribedTopics, out: ResultBuilder) -> dict[str, Partitions]:
        """Run the server assignor most members ask for; record what changes."""
        name = preferred_assignor(members.values(), self.config.consumer_assignors)
        try:
            assignor = get_server_assignor(name)
        except UnknownAssignor:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"no server assignor {name}") from None
        by_name = {n: tid for n, tid, _ in subscribed}
        # Members mostly share a subscription: its topic ids are worked out once per
        # assignment, not once per member (a join of N members assigns N times).
        topic_ids: dict[tuple, frozenset[str]] = {}

        def ids_of(meta: ConsumerMemberValue) -> frozenset[str]:
            key = (meta.subscribed_topic_names, meta.subscribed_topic_regex)
            ids = topic_ids.get(key)
            if ids is None:
                ids = topic_ids[key] = frozenset(by_name[n] for n in self.topics_of(meta, group) if n in by_name)
            return ids

        context = (subscribed, group.regexes)
        kept = group.assignor_inputs
        if not isinstance(kept, _AssignorInputs) or kept.topics is not self.shard.topics \
                or kept.context != context:
            kept = group.assignor_inputs = _AssignorInputs(self.shard.topics, context)
        followed = self._follow_join(group, kept.followed, assignor, members, targets, ids_of, out)
        if followed is not None:
            kept.followed, new_targets = followed
            return new_targets
        return self._assign_all(group, kept, assignor, members, targets, subscribed, ids_of, out)

    def _assign_all(self, group: ConsumerGroup, kept: _AssignorInputs, assignor: ServerAssignor,
                    members: dict[str, ConsumerGroupMember], targets: dict[str, Partitions],
                    subscribed: SubscribedTopics, ids_of: Callable[[ConsumerMemberValue], frozenset[str]],
                    out: ResultBuilder) -> dict[str, Partitions]:
        """The assignor over every member (what `_follow_join` cannot work out)."""
        # Each member's spec is kept from the last assignment while its metadata and target
        # are the same objects and so is what its topic ids are worked out from (the
        # broker's topics, replaced whole when they change, the group's subscribed topics
        # and resolved regexes): a join of N members builds N specs, not N * N / 2.
        # (Server assignors must not change their input.)
        no_target: Partitions = ()
        known = kept.specs
        # Which members' kept entries still hold, worked out at C speed; only the others
        # are visited in Python (at a join: the joiner and the members whose target moved).
        mids = sorted(members)
        metas = list(map(META_OF, map(members.__getitem__, mids)))
        olds = list(map(targets.get, mids))
        wanted = list(map(targets.get, mids, repeat(no_target)))   # a joiner has no target yet
        entries = list(map(known.get, mids, repeat(_NO_ENTRY)))
        fresh = list(map(not_, map(and_, map(is_, map(_FIRST, entries), metas),
                                   map(is_, map(_SECOND, entries), wanted))))
        for i in compress(range(len(mids)), fresh):
            meta, target = metas[i], wanted[i]
            entries[i] = known[mids[i]] = (meta, target, MemberSpec(
                mids[i], ids_of(meta), meta.instance_id, meta.rack_id,
                dict(target)))      # (topic, sorted partitions) pairs
        if len(known) > len(mids):
            for mid in known.keys() - members.keys():
                del known[mid]
        specs = dict(zip(mids, map(_THIRD, entries)))
        counts = {tid: count for _, tid, count in subscribed}
        spec = GroupSpec(members=specs)
        result = assignor.assign(spec, counts)
        # Unchanged (most members, when one joins or leaves): the old target is already in
        # canonical form (sorted, no empty topic) and is kept as it is. Found at C speed.
        gots = list(map(result.get, mids, repeat(_NOTHING)))
        new_targets: dict[str, Partitions] = dict(zip(mids, olds))
        moved = map(or_, map(ne, map(_ASSIGNMENT, specs.values()), gots), map(is_, olds, repeat(None)))
        for i in compress(range(len(mids)), moved):
            mid, old = mids[i], olds[i]
            assigned = tuple(sorted((t, tuple(sorted(ps))) for t, ps in gots[i].items() if ps))
            new_targets[mid] = assigned
            if old != assigned:
                out.record(ConsumerTargetRecord(group.group_id, mid, assigned))
        settled = assignor.settled(spec, counts, result) if isinstance(assignor, JoinFollower) else None
        kept.followed = None if settled is None else _Followed(
            assignor, tuple(mids), tuple(metas), tuple(map(new_targets.__getitem__, mids)), settled)
        return new_targets

    def _follow_join(self, group: ConsumerGroup, followed: _Followed | None, assignor: ServerAssignor,
                     members: dict[str, ConsumerGroupMember], targets: dict[str, Partitions],
                     ids_of: Callable[[ConsumerMemberValue], frozenset[str]], out: ResultBuilder,
                     ) -> tuple[_Followed, dict[str, Partitions]] | None:
        """The new targets when all that changed since the last assignment is one member
        joining, worked out by the assignor from the members that give it partitions (a join
        of N members would otherwise run the assignor N times over up to N members); None
        when anything else changed or the assignor cannot follow this join."""
        if followed is None or followed.assignor is not assignor or len(members) != len(followed.ids) + 1:
            return None
        ids = followed.ids
        # Every member of the last assignment is still here with the same metadata and
        # target (checked by identity, at C speed), and the one member left over is new.
        if not all(map(is_, map(targets.get, ids), followed.targets)):
            return None
        joiner = next(reversed(members))        # a heartbeat's member comes last (`members_of`)
        if joiner in targets:
            return None
        try:
            others = list(map(members.__getitem__, ids))
        except KeyError:
            return None
        if not all(map(is_, map(META_OF, others), followed.metas)):
            return None
        meta = members[joiner].meta
        got = assignor.join(followed.settled, joiner, ids_of(meta), lambda mid: dict(targets[mid]))
        if got is None:
            return None
        settled, changes = got
        new_targets = dict(targets)
        at = bisect_left(ids, joiner)
        new_ids = ids[:at] + (joiner,) + ids[at:]
        kept_targets = [*followed.targets[:at], None, *followed.targets[at:]]
        for mid in sorted(changes):
            assigned = tuple(sorted((t, ps) for t, ps in changes[mid].items() if ps))
            new_targets[mid] = kept_targets[bisect_left(new_ids, mid)] = assigned
            out.record(ConsumerTargetRecord(group.group_id, mid, assigned))
        return _Followed(assignor, new_ids, (*followed.metas[:at], meta, *followed.metas[at:]),
                         tuple(kept_targets), settled), new_targets

    # ---- leaving and fencing --------------------------------------------------------------

    def left(self, group: ConsumerGroup, member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest,
             reply: ReplyTo, now_ms: int, out: ResultBuilder) -> None:
        if req.instance_id is not None and member.meta.instance_id != req.instance_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"instance {req.instance_id} is not {req.member_id}'s")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # A static member steps out for a restart: it keeps its assignment (and the group
            # its epoch) until its session runs out, but not what it was revoking (it let go
            # of everything); its assignment epochs drop to 0, so its next incarnation may
            # commit for what it holds (KIP-1251). As Kafka 4.4 does.
            cur = member.current
            out.record(ConsumerCurrentRecord(group.group_id, member.member_id, at_epoch(ConsumerCurrentValue(
                STATIC_LEAVE_EPOCH, cur.previous_member_epoch, cur.state, cur.assigned, ()), 0)))
            self.arm_session(group.group_id, member.member_id,
                             now_ms + self.group_configs.consumer_session_timeout(group.group_id), out)
        else:
            self.fence(group, [member.member_id], out, now_ms)
        out.reply(reply, ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0, None))

    def cancel_timers(self, group_id: str, member_id: str, out: ResultBuilder) -> None:
        """Stage the cancelling of a member's session and revocation timers."""
        super().cancel_timers(group_id, member_id, out)
        out.then(self.timers.cancel, consumer_revoke_key(group_id, member_id))

    fence = remove_members

    def revoke_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.shard.consumer_groups.get(op.group_id)
        member = group.members.get(op.member_id) if group else None
        if (member is None or member.state is not MemberState.UNREVOKED_PARTITIONS
                or member.epoch != op.generation):
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "revocation timeout", Departure.FENCED)
        self.fence(group, [op.member_id], out, now_ms)   # it never gave the partitions back
        return out.build()

    # ---- describe -------------------------------------------------------------------------

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        """ConsumerGroupDescribe; a member's assignment is what it may still be consuming —
        assigned plus pending revocation, as Kafka describes it."""
        described = []
        for group_id in group_ids:
            group = self.shard.consumer_groups.get(group_id)
            if not group_id:
                # Kafka refuses the empty group id here (unlike DescribeGroups): INVALID_GROUP_ID.
                described.append(DescribedConsumerGroup(group_id, ErrorCode.INVALID_GROUP_ID, state=""))
                continue
            if group is None:
                message = f"Group {group_id} is not a consumer group." if group_id in self.shard.streams_groups \
                    else None
                described.append(DescribedConsumerGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, state="",
                                                        message=message))
                continue
            described.append(DescribedConsumerGroup(
                group_id, ErrorCode.NONE, group.state().value, group.epoch, group.target_epoch, self.assignor_of(group),
                tuple(DescribedConsumerMember(
                    m.member_id, m.meta.instance_id, m.meta.rack_id, m.epoch, m.meta.client_id,
                    m.meta.client_host, m.meta.subscribed_topic_names, m.meta.subscribed_topic_regex,
                    m.owned(), group.target.get(m.member_id, ()), 0 if m.meta.is_classic else 1)
                    for m in group.members.values())))
        return Result((), ((reply, tuple(described)),))

    def assignor_of(self, group: ConsumerGroup) -> str:
        """The server assignor the group's members ask for most (the default if none asks)."""
        return group.assignor_name(self.config)


class _AssignorInputs:
    """What `ConsumerProtocol.assign` handed the server assignor last time, per member:
    member id -> (metadata, target, MemberSpec), valid for one `topics` object (the
    broker's) and `context` (the group's subscribed topics and resolved regexes): what
    a member's topic ids are worked out from."""

    __slots__ = ("topics", "context", "specs", "followed")

    def __init__(self, topics: dict, context: tuple) -> None:
        self.topics = topics
        self.context = context
        self.specs: dict[str, tuple[ConsumerMemberValue, Partitions, MemberSpec]] = {}
        self.followed: _Followed | None = None


@dataclass(frozen=True, slots=True)
class _Followed:
    """What the last assignment left for a `JoinFollower` to work the next join out from: the
    members it placed (`ids`, sorted) with the metadata and target each had, and the
    assignor's own state (`settled`)."""

    assignor: ServerAssignor
    ids: tuple[str, ...]
    metas: tuple[ConsumerMemberValue, ...]
    targets: tuple[Partitions, ...]
    settled: Any


_ASSIGNMENT = attrgetter("assignment")
_FIRST, _SECOND, _THIRD = itemgetter(0), itemgetter(1), itemgetter(2)
_NO_ENTRY = (None, None, None)
_NOTHING: dict = {}
# Kafka 4.4's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: a group's regexes are resolved at most
# once per 10 s, and its group.consumer.regex.refresh.interval.ms default: at least every 10
# minutes while members heartbeat.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
REGEX_REFRESH_INTERVAL_MS = 600_000


def _keeps_metadata(old: ConsumerMemberValue, req: ConsumerGroupHeartbeatRequest) -> bool:
    """Whether folding `req` into a consumer member's metadata `old` gives `old` again: the
    request sets none of its fields but the static member's own instance id and its own
    client id and host (left out means "as before"), and `old` is not a classic member's
    (whose fold is another). `subscribed_topic_regex` "" in `old` would fold to None."""
    return (req.rebalance_timeout_ms == -1 and req.subscribed_topic_names is None
            and req.subscribed_topic_regex is None and req.rack_id is None and req.server_assignor is None
            and (req.instance_id is None or req.instance_id == old.instance_id)
            and req.client_id in ("", old.client_id) and req.client_host in ("", old.client_host)
            and old.classic_protocols is None and old.classic_session_timeout_ms == -1
            and old.subscribed_topic_regex != "")


def _subset(owned: Partitions, assigned: Partitions) -> bool:
    mine = as_dict(assigned)
    return all(set(ps) <= mine.get(t, set()) for t, ps in owned)
