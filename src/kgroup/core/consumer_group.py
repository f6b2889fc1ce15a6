"""A consumer group of the consumer protocol (KIP-848) and how a member reconciles.

How this works: the coordinator owns the assignment. The group epoch moves whenever what the
group asks for changes (a member joins, leaves or changes its subscription, a subscribed
topic changes); when it is ahead of the target assignment's epoch, the server assignor
computes a new target and stamps it with the group epoch. Each member then walks towards
its own target one heartbeat at a time (`reconcile`):

- partitions in both its current and target assignment stay;
- partitions it holds but the target does not are *pending revocation*: the member keeps
  its epoch and stays UNREVOKED_PARTITIONS until a heartbeat shows it no longer owns them
  (no such step when the heartbeat that brings the target already shows that);
- partitions the target adds are handed over only when no other member still holds them
  (else UNRELEASED_PARTITIONS, at the target epoch);
- with nothing to revoke and nothing unreleased the member is STABLE at the target epoch.

Every step that changes the member records the epoch it left as its previous epoch (a
heartbeat at that epoch is forgiven: the member missed an answer). A rejoin (epoch 0) is
such a step from where the member stands, not a reset. These are the rules of Kafka 4.4's
CurrentAssignmentBuilder, checked by random heartbeat sequences run on both brokers
(scenario `consumer_random_sequences`).

Each held partition keeps the epoch at which it was assigned (KIP-1251, assignment_epochs.py):
a partition kept keeps it, a new one takes the epoch the step moves the member to.

So a partition never has two owners: `owners` maps each held partition (assigned or pending
revocation) to its member, and a partition enters someone's assigned set only when it has
no owner. Unlike classic groups, this whole aggregate is durable: only `replay` (in
coordinator.py) changes it; handlers compute records. What consumer groups share with the
other modern kinds (epochs, members, the target assignment, replay) is modern_group.py's;
this module keeps what is the consumer protocol's own: reconciliation and its states.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import ClassVar

from kgroup.core.assignment_epochs import stamp
from kgroup.core.config import GroupConfig
from kgroup.core.errors import IllegalGroupTransition
from kgroup.core.records import (
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberValue,
    ConsumerRegexRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
    MemberState,
    Partitions,
    ResolvedRegex,
)
from kgroup.core.modern_group import ModernGroup, ModernMember, ModernRecords, Phase, register_records, replaced
from kgroup.group_types import CONSUMER, GroupType


_M = MemberState


class EpochMove(Enum):
    """What a reconciliation step does to the member's epoch."""

    KEEP = "keep"          # it still owes partitions back: no new epoch until it revokes
    TO_TARGET = "target"   # it reaches the target assignment's epoch


# The moves one reconciliation step (`reconcile`) may make, and what each does to the epoch.
# Every state can reach every state: a new target can take partitions away from a member
# whatever it was doing (-> UNREVOKED, keeping its epoch), and once it has nothing to give
# back it moves to the target epoch, STABLE or still waiting for a partition another member
# holds (UNRELEASED). What the table rules out is the epoch going the wrong way: a member
# that must revoke never gets the new epoch, one that is done always does. The guards that
# keep a member where it is (STABLE at the target epoch; UNREVOKED while it still reports a
# partition pending revocation) are in `reconcile`, which returns the value unchanged.
MEMBER_TRANSITIONS: dict[MemberState, dict[MemberState, EpochMove]] = {
    source: {
        _M.STABLE: EpochMove.TO_TARGET,
        _M.UNRELEASED_PARTITIONS: EpochMove.TO_TARGET,
        _M.UNREVOKED_PARTITIONS: EpochMove.KEEP,
    }
    for source in MemberState
}


def check_member_transition(current: ConsumerCurrentValue, nxt: ConsumerCurrentValue, target_epoch: int) -> None:
    """Raise IllegalGroupTransition unless `current` -> `nxt` is a move the table allows."""
    move = MEMBER_TRANSITIONS[current.state].get(nxt.state)
    expected = current.member_epoch if move is EpochMove.KEEP else target_epoch
    if move is None or nxt.member_epoch != expected:
        raise IllegalGroupTransition(
            f"member {current.state.value}@{current.member_epoch} -> {nxt.state.value}@{nxt.member_epoch} "
            f"(target epoch {target_epoch})")


class GroupState(Enum):
    """As DescribeGroups / ListGroups / ConsumerGroupDescribe report it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


def as_dict(partitions: Partitions) -> dict[str, set[int]]:
    return {t: set(ps) for t, ps in partitions}


def as_tuple(mapping: dict[str, set[int]] | dict[str, tuple[int, ...]]) -> Partitions:
    return tuple(sorted((t, tuple(sorted(ps))) for t, ps in mapping.items() if ps))


NEW_MEMBER = ConsumerCurrentValue(0, 0, MemberState.STABLE, (), ())


@dataclass(slots=True)
class ConsumerGroupMember(ModernMember):
    meta: ConsumerMemberValue
    current: ConsumerCurrentValue = NEW_MEMBER

    @property
    def state(self) -> MemberState:
        return self.current.state

    def owned(self) -> Partitions:
        """Assigned plus pending revocation: what this member may still be consuming."""
        merged = as_dict(self.current.assigned)
        for t, ps in self.current.pending_revocation:
            merged.setdefault(t, set()).update(ps)
        return as_tuple(merged)


@register_records
@dataclass(slots=True)
class ConsumerGroup(ModernGroup):
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    # (topic id, partition) -> member id that still holds it
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    # Not state: what the last assignment handed the server assignor for each member, kept
    # so the next one reuses it (consumer_protocol.ConsumerProtocol.assign checks each entry
    # against the member's metadata and target by identity before reusing it).
    assignor_inputs: object = field(default=None, compare=False, repr=False)
    # The subscribed regular expressions as last resolved (ConsumerRegexRecord): a member
    # subscribed by regex is counted for these topics only, never for a regex not resolved
    # yet. Replaced whole on a change.
    regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    # Not state: how many members subscribe with each regex (kept by replay).
    regex_counts: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    RECORDS: ClassVar[ModernRecords] = ModernRecords(
        ConsumerGroupEpochRecord, ConsumerMemberRecord, ConsumerTargetRecord, ConsumerTargetEpochRecord,
        ConsumerCurrentRecord)
    MORE_RECORDS: ClassVar[tuple[type, ...]] = (ConsumerRegexRecord,)
    TYPE: ClassVar[GroupType] = CONSUMER
    MEMBER: ClassVar[type] = ConsumerGroupMember
    NEW_CURRENT: ClassVar[ConsumerCurrentValue] = NEW_MEMBER

    def state(self) -> GroupState:
        return _STATES[self.phase()]

    @classmethod
    def state_of(cls, phase: Phase) -> GroupState:
        return _STATES[phase]

    @staticmethod
    def is_converged(current: ConsumerCurrentValue, target_epoch: int) -> bool:
        # At the target epoch with nothing left to revoke or to wait for.
        return current.member_epoch == target_epoch and current.state is MemberState.STABLE

    @classmethod
    def unconverged_among(cls, currents: list[ConsumerCurrentValue], target_epoch: int) -> int:
        # A new target's epoch is one no member has reached yet, so at every join of a
        # growing group the answer is "all of them", found by a scan at C speed instead of
        # a call per member.
        if target_epoch not in map(_MEMBER_EPOCH, currents):
            return len(currents)
        converged = cls.is_converged
        return sum(1 for c in currents if not converged(c, target_epoch))

    def assignor_name(self, config: GroupConfig) -> str:
        """The server assignor its members ask for most (`preferred_assignor`)."""
        return preferred_assignor(self.members.values(), config.consumer_assignors)

    # ---- regular expressions -------------------------------------------------------------

    @property
    def last_regex_refresh_ms(self) -> int | None:
        """When its regexes were last resolved (None: none is)."""
        return max((r.timestamp_ms for r in self.regexes.values()), default=None)

    @property
    def regex_version(self) -> int:
        """The version of the broker's topics its regexes were last resolved against."""
        latest = max(self.regexes.values(), key=_TIMESTAMP, default=None)
        return latest.version if latest is not None else 0

    def apply_more(self, record: ConsumerRegexRecord) -> None:
        self.regexes = replaced(self.regexes, record.regex, record.value)
        self.subscription_inputs = None         # what a regex member subscribes to moved

    def snapshot(self) -> list:
        out = ModernGroup.snapshot(self)
        out[1:1] = [ConsumerRegexRecord(self.group_id, r, v) for r, v in sorted(self.regexes.items())]
        return out

    def _count_regex(self, regex: str | None, by: int) -> None:
        if regex:
            n = self.regex_counts.get(regex, 0) + by
            if n > 0:
                self.regex_counts[regex] = n
            else:
                self.regex_counts.pop(regex, None)

    def _added(self, member: ConsumerGroupMember) -> None:
        self._count_regex(member.meta.subscribed_topic_regex, 1)

    def _meta(self, member: ConsumerGroupMember, value: ConsumerMemberValue) -> None:
        if value.subscribed_topic_regex != member.meta.subscribed_topic_regex:
            self._count_regex(member.meta.subscribed_topic_regex, -1)
            self._count_regex(value.subscribed_topic_regex, 1)
        member.meta = value

    def _removed(self, member: ConsumerGroupMember) -> None:
        self._count_regex(member.meta.subscribed_topic_regex, -1)

    def _holds(self, member: ConsumerGroupMember, value: ConsumerCurrentValue | None) -> None:
        """Keep `owners` in step: a partition is owned while assigned or pending revocation."""
        member_id = member.member_id
        for t, ps in member.owned():
            for p in ps:
                if self.owners.get((t, p)) == member_id:
                    del self.owners[(t, p)]
        if value is None:
            return
        for t, ps in value.assigned:
            for p in ps:
                self.owners[(t, p)] = member_id
        for t, ps in value.pending_revocation:
            for p in ps:
                self.owners[(t, p)] = member_id


_MEMBER_EPOCH = attrgetter("member_epoch")
_TIMESTAMP = attrgetter("timestamp_ms")
_SERVER_ASSIGNOR = attrgetter("meta.server_assignor")


def preferred_assignor(members, assignors: tuple[str, ...]) -> str:
    """The server assignor `members` ask for most; the coordinator's first (of `assignors`,
    its configured ones) if none asks, and of two asked for as often the one it lists first
    (Kafka 4.4 breaks such a tie by hash order, which for its two default assignors puts
    uniform first; docs/protocol.md says what else a tie does there)."""
    votes = Counter(filter(None, map(_SERVER_ASSIGNOR, members)))
    if not votes:
        return assignors[0]
    best = max(votes.values())
    return next((a for a in assignors if votes.get(a) == best), None) or max(votes, key=votes.__getitem__)


_STATES = {Phase.EMPTY: GroupState.EMPTY, Phase.ASSIGNING: GroupState.ASSIGNING,
           Phase.RECONCILING: GroupState.RECONCILING, Phase.STABLE: GroupState.STABLE}


def reconcile(member_id: str, current: ConsumerCurrentValue, target: Partitions, target_epoch: int,
              owners: dict[tuple[str, int], str], owned_reported: Partitions | None,
              subscribed: frozenset[str] | None = None, resubscribed: bool = False) -> ConsumerCurrentValue:
    """The member's next step towards its target (Kafka's CurrentAssignmentBuilder).

    `owned_reported` is what the heartbeat says the member owns (None: not said, so it may
    own anything it holds). A partition to revoke that the member already reports not owning
    needs no revocation step; a partition the target adds is handed over only when no other
    member holds it. Every step that changes the member records its epoch before
    the step as the previous epoch (a heartbeat at that epoch is still accepted).

    `subscribed` is the ids of the topics the member subscribes to now (None: whatever the
    target holds): the target's partitions of other topics are not handed over. When its
    subscription changed (`resubscribed`) but there is no new target for it to walk to, the
    partitions it holds of topics it no longer subscribes to are revoked at once."""
    state = current.state
    if state is MemberState.UNREVOKED_PARTITIONS:
        # Stay until the member shows it let go of everything pending revocation.
        if _still_owns(current.pending_revocation, owned_reported):
            return _unsubscribed_revoked(current, subscribed, owned_reported) if resubscribed else current
    elif state is MemberState.STABLE and current.member_epoch == target_epoch:
        return _unsubscribed_revoked(current, subscribed, owned_reported) if resubscribed else current
    held = as_dict(current.assigned)
    wanted = as_dict(target if subscribed is None else tuple(tp for tp in target if tp[0] in subscribed))
    keep: dict[str, set[int]] = {}
    revoke: dict[str, set[int]] = {}
    unreleased = False
    for topic in sorted(set(held) | set(wanted)):
        mine, goal = held.get(topic, set()), wanted.get(topic, set())
        keep[topic] = mine & goal
        gone = mine - goal
        if gone:
            revoke[topic] = gone
        for p in goal - mine:
            owner = owners.get((topic, p))
            if owner is None or owner == member_id:
                keep[topic].add(p)
            else:
                unreleased = True
    if revoke and _still_owns(as_tuple(revoke), owned_reported):
        # Revocation first: the member gets nothing new until it has given up what moves,
        # so no partition is ever owned twice.
        nxt = ConsumerCurrentValue(current.member_epoch, current.member_epoch, MemberState.UNREVOKED_PARTITIONS,
                                   as_tuple({t: held[t] & wanted.get(t, set()) for t in held}), as_tuple(revoke))
    else:
        nxt = ConsumerCurrentValue(target_epoch, current.member_epoch,
                                   MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
                                   as_tuple(keep), ())
    check_member_transition(current, nxt, target_epoch)
    if (nxt.member_epoch == current.member_epoch and nxt.previous_member_epoch == current.previous_member_epoch
            and nxt.state == current.state and nxt.assigned == current.assigned
            and nxt.pending_revocation == current.pending_revocation):
        return current
    return stamp(nxt, current)


def _unsubscribed_revoked(current: ConsumerCurrentValue, subscribed: frozenset[str] | None,
                          owned_reported: Partitions | None) -> ConsumerCurrentValue:
    """A member whose subscription changed without a new target to walk to: what it holds of
    topics it no longer subscribes to goes to pending revocation at once, at its epoch (all
    of it when it subscribes to nothing), as Kafka 4.4's updateCurrentAssignment does."""
    if subscribed is None:
        return current
    if not subscribed and not current.pending_revocation:
        kept: Partitions = ()
        pending = current.assigned
    else:
        kept = tuple((t, ps) for t, ps in current.assigned if t in subscribed)
        gone = tuple((t, ps) for t, ps in current.assigned if t not in subscribed)
        pending = current.pending_revocation
        if gone:
            merged = as_dict(pending)
            for t, ps in gone:
                merged.setdefault(t, set()).update(ps)
            pending = as_tuple(merged)
    if kept == current.assigned:
        return current
    epoch = current.member_epoch
    if pending and _still_owns(pending, owned_reported):
        nxt = ConsumerCurrentValue(epoch, epoch, MemberState.UNREVOKED_PARTITIONS, kept, pending)
    else:
        nxt = ConsumerCurrentValue(epoch, epoch, current.state, kept, current.pending_revocation)
    return stamp(nxt, current)


def _still_owns(partitions: Partitions, owned_reported: Partitions | None) -> bool:
    """Whether the member may still own any of `partitions` (unreported: it may)."""
    if owned_reported is None:
        return True
    mine = as_dict(partitions)
    # Every entry counts: a request may name a topic twice (as_dict would keep the last).
    return any(not mine.get(t, set()).isdisjoint(ps) for t, ps in owned_reported)


def apply_consumer_record(groups: dict[str, ConsumerGroup], record) -> bool:
    """Replay one consumer-group record into `groups`; True if it created the group."""
    return ConsumerGroup.apply(groups, record)
