"""A consumer group of the consumer protocol (KIP-848) and how a member reconciles.

How this works: the coordinator owns the assignment. The group epoch moves whenever what the
group asks for changes (a member joins, leaves or changes its subscription, a subscribed
topic changes); when it is ahead of the target assignment's epoch, the server assignor
computes a new target and stamps it with the group epoch. Each member then walks towards
its own target one heartbeat at a time (`reconcile`):

- partitions in both its current and target assignment stay;
- partitions it holds but the target does not are *pending revocation*: the member keeps
  its epoch and stays UNREVOKED_PARTITIONS until a heartbeat shows it no longer owns them;
- partitions the target adds are handed over only when no other member still holds them
  (else UNRELEASED_PARTITIONS, at the target epoch);
- with nothing to revoke and nothing unreleased the member is STABLE at the target epoch.

So a partition never has two owners: `owners` maps each held partition (assigned or pending
revocation) to its member, and a partition enters someone's assigned set only when it has
no owner. Unlike classic groups, this whole aggregate is durable: only `replay` (in
coordinator.py) changes it; handlers compute records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kgroup.core.errors import IllegalGroupTransition
from kgroup.core.records import (
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberValue,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
    MemberState,
    Partitions,
)


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


@dataclass(slots=True)
class ConsumerGroupMember:
    member_id: str
    meta: ConsumerMemberValue
    current: ConsumerCurrentValue = field(default_factory=lambda: ConsumerCurrentValue(
        0, 0, MemberState.STABLE, (), ()))

    @property
    def epoch(self) -> int:
        return self.current.member_epoch

    @property
    def state(self) -> MemberState:
        return self.current.state

    def owned(self) -> Partitions:
        """Assigned plus pending revocation: what this member may still be consuming."""
        merged = as_dict(self.current.assigned)
        for t, ps in self.current.pending_revocation:
            merged.setdefault(t, set()).update(ps)
        return as_tuple(merged)


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    # ((topic name, topic id, partitions), ...) the group subscribed to at `epoch`
    subscribed: tuple[tuple[str, str, int], ...] = ()
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    # (topic id, partition) -> member id that still holds it
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    # Moves with every record replayed into the group, so an observer can tell "unchanged"
    # without a look inside; not part of the group's value.
    version: int = field(default=0, compare=False)

    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.epoch > self.target_epoch:
            return GroupState.ASSIGNING
        for m in self.members.values():
            if m.epoch != self.target_epoch or m.state is not MemberState.STABLE:
                return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.meta.instance_id == instance_id:
                return m
        return None

    def set_current(self, member_id: str, value: ConsumerCurrentValue | None) -> None:
        """Replay helper: update a member's current assignment and the owner index."""
        member = self.members.get(member_id)
        if member is not None:
            for t, ps in member.owned():
                for p in ps:
                    if self.owners.get((t, p)) == member_id:
                        del self.owners[(t, p)]
        if value is None or member is None:
            return
        member.current = value
        for t, ps in member.owned():
            for p in ps:
                self.owners[(t, p)] = member_id


def reconcile(member_id: str, current: ConsumerCurrentValue, target: Partitions, target_epoch: int,
              owners: dict[tuple[str, int], str], owned_reported: Partitions | None) -> ConsumerCurrentValue:
    """The member's next step towards its target (Kafka's CurrentAssignmentBuilder)."""
    state = current.state
    if state is MemberState.UNREVOKED_PARTITIONS:
        # Stay until the member shows it let go of everything pending revocation.
        if owned_reported is None:
            return current
        still = as_dict(owned_reported)
        if any(still.get(t, set()) & set(ps) for t, ps in current.pending_revocation):
            return current
    elif state is MemberState.STABLE and current.member_epoch == target_epoch:
        return current
    held = as_dict(current.assigned)
    wanted = as_dict(target)
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
    if revoke:
        # Revocation first: the member keeps its epoch and gets nothing new until it has
        # given up what moves, so no partition is ever owned twice.
        nxt = ConsumerCurrentValue(current.member_epoch, current.previous_member_epoch,
                                   MemberState.UNREVOKED_PARTITIONS,
                                   as_tuple({t: held[t] & wanted.get(t, set()) for t in held}),
                                   as_tuple(revoke))
    elif unreleased:
        nxt = ConsumerCurrentValue(target_epoch, current.member_epoch,
                                   MemberState.UNRELEASED_PARTITIONS, as_tuple(keep), ())
    else:
        nxt = ConsumerCurrentValue(target_epoch, current.member_epoch, MemberState.STABLE,
                                   as_tuple(keep), ())
    check_member_transition(current, nxt, target_epoch)
    if (nxt.member_epoch == current.member_epoch and nxt.state == current.state
            and nxt.assigned == current.assigned and nxt.pending_revocation == current.pending_revocation):
        return current
    if nxt.member_epoch == current.member_epoch:
        nxt = ConsumerCurrentValue(nxt.member_epoch, current.previous_member_epoch, nxt.state,
                                   nxt.assigned, nxt.pending_revocation)
    return nxt


def apply_consumer_record(groups: dict[str, ConsumerGroup], record) -> bool:
    """Replay one consumer-group record into `groups`; True if it created the group."""
    kind = type(record)
    group = groups.get(record.group_id)
    if kind is ConsumerGroupEpochRecord and record.epoch is None:
        groups.pop(record.group_id, None)
        return False
    created = group is None
    if created:
        group = groups[record.group_id] = ConsumerGroup(record.group_id)
    group.version += 1
    if kind is ConsumerGroupEpochRecord:
        group.epoch = record.epoch
        group.subscribed = record.subscribed
    elif kind is ConsumerMemberRecord:
        if record.value is None:
            group.set_current(record.member_id, None)
            group.members.pop(record.member_id, None)
        elif record.member_id in group.members:
            group.members[record.member_id].meta = record.value
        else:
            group.members[record.member_id] = ConsumerGroupMember(record.member_id, record.value)
    elif kind is ConsumerTargetRecord:
        if record.partitions is None:
            group.target.pop(record.member_id, None)
        else:
            group.target[record.member_id] = record.partitions
    elif kind is ConsumerTargetEpochRecord:
        if record.epoch is not None:
            group.target_epoch = record.epoch
    elif kind is ConsumerCurrentRecord:
        group.set_current(record.member_id, record.value)
    else:
        raise TypeError(f"not a group-metadata record: {record!r}")
    return created
