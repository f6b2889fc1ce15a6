"""The shared base of the modern group kinds: consumer groups (KIP-848), share groups
(KIP-932) and streams groups (KIP-1071).

How this works: a modern group is durable as a whole and the coordinator owns its
assignment. It holds

- its members, each with its metadata (what it subscribes to, who it is: the kind's value)
  and its *current* value (its member epoch, the epoch before, and what it holds now);
- the *group epoch*, which moves whenever what the assignment depends on changes (a member
  joins, leaves or changes its subscription, a subscribed topic changes), and `subscribed`,
  the metadata of what the group subscribes to at that epoch (topics with their ids and
  partition counts; a streams group's subtopologies in their place);
- the *target assignment* per member and its epoch: when the group epoch is ahead of the
  target epoch, the kind's assignor computes a new target stamped with the group epoch, and
  each member then walks towards its own target one heartbeat at a time.

A member is *converged* when it is at the target epoch holding its target (the kind says
what else it must be: a consumer member must have nothing left to revoke). The group keeps
how many members are not, so its phase (Empty, Assigning, Reconciling, Stable) costs
nothing to read: kinds report their state from it.

Only `replay` changes a group: `ModernGroup.apply` takes one of the kind's five records
(group epoch, member, target, target epoch, current: `ModernRecords` names which class is
which for a kind), or one of the records only its kind has (`MORE_RECORDS`: a streams
group's topology), and updates the group, its members and the count. Handlers
(modern_protocol.py and each kind's protocol module) compute those records.

What differs per kind is small and lives in the kind's module: the member's metadata and
current value, how a member reconciles (consumer_group.reconcile; a share member takes its
target at once; a streams member reconciles tasks), its states, and any index it keeps (a
consumer group's partition owners, a streams group's task holders), through the hooks
marked "hook" below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Any, Callable, ClassVar, Iterator, NamedTuple

# ((topic name, topic id, partitions), ...): what a group subscribes to at its epoch.
SubscribedTopics = tuple[tuple[str, str, int], ...]


class Phase(Enum):
    """Where a modern group stands between its group epoch, its target and its members."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"            # the group epoch is ahead of the target assignment
    RECONCILING = "Reconciling"        # some member has not reached the target yet
    STABLE = "Stable"


class ModernRecords(NamedTuple):
    """The record classes of one modern kind, by role (the log keeps each kind's own)."""

    epoch: type            # (group_id, epoch, subscribed); epoch None deletes the group
    member: type           # (group_id, member_id, value); value None removes the member
    target: type           # (group_id, member_id, partitions); None removes the target
    target_epoch: type     # (group_id, epoch)
    current: type          # (group_id, member_id, value)


@dataclass(slots=True)
class ModernMember:
    member_id: str
    meta: Any
    current: Any

    @property
    def epoch(self) -> int:
        return self.current.member_epoch


def phase_of(members: int, epoch: int, target_epoch: int, unconverged: int) -> Phase:
    """The phase of a group of `members` members, `unconverged` of them not at the target."""
    if not members:
        return Phase.EMPTY
    if epoch > target_epoch:
        return Phase.ASSIGNING
    return Phase.RECONCILING if unconverged else Phase.STABLE


# The roles of a kind's records (the fields of ModernRecords, in order), and MORE: a record
# only its kind has (MORE_RECORDS), replayed by the kind's `apply_more`.
EPOCH, MEMBER, TARGET, TARGET_EPOCH, CURRENT, MORE = range(6)
_EPOCH, _MEMBER, _TARGET, _TARGET_EPOCH, _CURRENT, _MORE = EPOCH, MEMBER, TARGET, TARGET_EPOCH, CURRENT, MORE


@dataclass(slots=True)
class ModernGroup:
    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    subscribed: SubscribedTopics = ()
    members: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)
    # When the assignor computed the target (KIP-1263's assignment timestamp, from the
    # target epoch record; 0: never, or the group emptied, so the next may run at once).
    target_timestamp: int = 0
    # Members not converged to the target epoch (kept by `apply`, so the phase is a read).
    unconverged: int = field(default=0, compare=False)
    # The group epoch it was last Stable at, kept from the change that took it out of Stable
    # (the group events' "settled": a rebalance completes at a later epoch). Not durable: a
    # group loaded from the log starts from what it is.
    settled: int = field(default=-1, compare=False)
    # Not state: what the last `subscribed_metadata` over its members found (the protocol's
    # to keep and check), so a join does not go over every member's subscription again.
    subscription_inputs: Any = field(default=None, compare=False, repr=False)
    # No member's epoch is above it (None: not known yet, found by a scan): a new target's
    # epoch above it is one no member has reached, so the count after it is every member.
    epoch_high: int | None = field(default=None, compare=False, repr=False)

    # What a kind says: its records, its member class and a new member's current value.
    RECORDS: ClassVar[ModernRecords]
    MORE_RECORDS: ClassVar[tuple[type, ...]] = ()
    MEMBER: ClassVar[type]
    NEW_CURRENT: ClassVar[Any]

    # The kind: a kind's group class says which registry entry it is.
    TYPE: ClassVar[Any]

    live: ClassVar[bool] = True

    def state(self) -> Enum:
        """Its state, as Describe and ListGroups report it."""
        return self.state_of(self.phase())

    @classmethod
    def state_of(cls, phase: Phase) -> Enum:
        """The kind's: the state it reports in `phase`."""
        raise NotImplementedError

    @classmethod
    def state_after(cls, group: "ModernGroup | None", phase: Phase, records: list[Any]) -> Enum:
        """Hook: the state `group` (None: a new one) reports once `records` are replayed into
        it, in `phase` (what the group events tell; a kind whose state reads more than the
        phase says so)."""
        return cls.state_of(phase)

    @classmethod
    def held_by_name(cls, group: "ModernGroup | None", records: list[Any],
                     name: Callable[[str], str]) -> Callable[[Any], tuple[tuple[str, int], ...]]:
        """Hook: what a member's current value holds, as (topic name, partition) sorted, once
        `records` are replayed into `group` (the group events' assignments); `name` names a
        topic id."""
        return lambda current: tuple(sorted((name(t), p) for t, ps in current.assigned for p in ps))

    def status(self) -> tuple[str, int]:
        """(state, group epoch), as the group events and the views report them."""
        return self.state().value, self.epoch

    def partitions_of(self, member: Any) -> Iterator[tuple[str, int]]:
        """(topic id, partition) of what a member holds now, as the views show it."""
        return ((t, p) for t, ps in member.current.assigned for p in ps)

    def static_member(self, instance_id: str | None) -> Any:
        """The member with static instance id `instance_id` (None: none, or not given)."""
        if instance_id is None:
            return None
        for m in self.members.values():
            if getattr(m.meta, "instance_id", None) == instance_id:
                return m
        return None

    def phase(self) -> Phase:
        return phase_of(len(self.members), self.epoch, self.target_epoch, self.unconverged)

    def converged(self, current: Any) -> bool:
        """Whether a member whose current value is `current` has reached the target."""
        return self.is_converged(current, self.target_epoch)

    @staticmethod
    def is_converged(current: Any, target_epoch: int) -> bool:
        """Whether a member at `current` has reached a target of `target_epoch` (a kind may
        ask more of it)."""
        return current.member_epoch == target_epoch

    def epoch_record(self, epoch: int, subscribed: SubscribedTopics) -> Any:
        """Hook: the record of a group epoch `epoch` subscribed to `subscribed`, with whatever
        else the kind's epoch record keeps as it is."""
        return self.RECORDS.epoch(self.group_id, epoch, subscribed)

    def snapshot(self) -> list[Any]:
        """The records that rebuild this group from nothing (for log snapshots)."""
        records, gid = self.RECORDS, self.group_id
        out = [self.epoch_record(self.epoch, self.subscribed)]
        out += [records.member(gid, mid, m.meta) for mid, m in self.members.items()]
        out += [records.target(gid, mid, target) for mid, target in sorted(self.target.items())]
        stamp = (self.target_timestamp,) if self.target_timestamp else ()
        out.append(records.target_epoch(gid, self.target_epoch, *stamp))
        out += [records.current(gid, mid, m.current) for mid, m in self.members.items()]
        return out

    # ---- replay -------------------------------------------------------------------------

    def set_current(self, member_id: str, value: Any) -> None:
        """A member's current value changes (None: it lets go of what it held)."""
        member = self.members.get(member_id)
        if member is None:
            return
        if value is None:
            # It holds nothing now; it stays a member (as it was) until its member record goes.
            self._holds(member, None)
            return
        self.unconverged += (not self.converged(value)) - (not self.converged(member.current))
        self._holds(member, value)
        member.current = value
        if self.epoch_high is not None and value.member_epoch > self.epoch_high:
            self.epoch_high = value.member_epoch

    def _holds(self, member: Any, value: Any) -> None:
        """Hook: `member`'s current value becomes `value` (None: it goes); for indexes."""

    def _epoch(self, record: Any) -> None:
        """Hook: replay a group epoch record (a kind's may carry more)."""
        self.epoch = record.epoch
        self.subscribed = record.subscribed

    def _meta(self, member: Any, value: Any) -> None:
        """Hook: an existing member's metadata becomes `value`."""
        member.meta = value

    def _added(self, member: Any) -> None:
        """Hook: `member` joined the group (for what a kind keeps of it beside the records)."""

    def _removed(self, member: Any) -> None:
        """Hook: `member` left the group (for what a kind keeps of it beside the records)."""

    def apply_more(self, record: Any) -> None:
        """Hook: replay one of the kind's MORE_RECORDS."""
        raise TypeError(f"not a {type(self).__name__} record: {record!r}")

    @classmethod
    def unconverged_among(cls, currents: list[Any], target_epoch: int) -> int:
        """How many of these current values have not reached a target of `target_epoch`
        (a kind may count faster: this runs over the whole group at every new target)."""
        converged = cls.is_converged
        return sum(1 for c in currents if not converged(c, target_epoch))

    @classmethod
    def unconverged_in(cls, members: dict[str, Any], target_epoch: int) -> int:
        """How many of these members (id -> member) have not reached `target_epoch`."""
        return cls.unconverged_among(list(map(_CURRENT_OF, members.values())), target_epoch)

    def _recount(self) -> None:
        self.unconverged = self.unconverged_at(self.target_epoch)

    def unconverged_at(self, target_epoch: int) -> int:
        """How many of its members have not reached a target of `target_epoch`: all of them
        when it is above every member's epoch (a growing group's every join), else counted."""
        if self.epoch_high is None:
            self.epoch_high = max(map(_MEMBER_EPOCH, map(_CURRENT_OF, self.members.values())), default=0)
        if target_epoch > self.epoch_high:
            return len(self.members)
        return self.unconverged_in(self.members, target_epoch)

    @classmethod
    def apply(cls, groups: dict[str, "ModernGroup"], record: Any) -> bool:
        """Replay one of the kind's records into `groups`; True if it created the group."""
        role = _ROLES.get(cls, {}).get(type(record))
        if role is None:
            raise TypeError(f"not a {cls.__name__} record: {record!r}")
        group = groups.get(record.group_id)
        if role == _EPOCH and record.epoch is None:
            groups.pop(record.group_id, None)
            return False
        created = group is None
        if created and role == _MORE and getattr(record, "value", True) is None:
            return False            # a tombstone of a kind's own record never makes a group
        if created:
            group = groups[record.group_id] = cls(record.group_id)
        if role == _EPOCH:
            group._epoch(record)
        elif role == _MEMBER:
            members = group.members
            if record.value is None:
                member = members.pop(record.member_id, None)
                if member is not None:
                    group._holds(member, None)
                    group.unconverged -= not group.converged(member.current)
                    group._removed(member)
            elif record.member_id in members:
                group._meta(members[record.member_id], record.value)
            else:
                member = members[record.member_id] = cls.MEMBER(record.member_id, record.value, cls.NEW_CURRENT)
                group._added(member)
                group.unconverged += not group.converged(member.current)
                if group.epoch_high is not None and member.current.member_epoch > group.epoch_high:
                    group.epoch_high = member.current.member_epoch
                group._holds(member, member.current)
        elif role == _TARGET:
            if record.partitions is None:
                group.target.pop(record.member_id, None)
            else:
                group.target[record.member_id] = record.partitions
        elif role == _TARGET_EPOCH:
            if record.epoch is not None:
                group.target_epoch = record.epoch
                group.target_timestamp = getattr(record, "timestamp_ms", 0)
                group._recount()
        elif role == _CURRENT:
            group.set_current(record.member_id, record.value)
        else:
            group.apply_more(record)
        return created


# kind class -> record class -> role, and record class -> kind class, filled by
# `register_records`.
_ROLES: dict[type, dict[type, int]] = {}
def replaced(mapping: dict, key, value) -> dict:
    """A copy of `mapping` with `key` set to `value`, or without it when `value` is None (a
    kind's MORE_RECORDS state is replaced whole on a change, never mutated in place)."""
    out = dict(mapping)
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out


KIND_OF_RECORD: dict[type, type] = {}


def role_of(record: Any) -> int:
    """Which of its kind's records `record` is (EPOCH, MEMBER, ..., MORE)."""
    return _ROLES[KIND_OF_RECORD[type(record)]][type(record)]


_CURRENT_OF = attrgetter("current")
_MEMBER_EPOCH = attrgetter("member_epoch")


def register_records(cls: type[ModernGroup]) -> type[ModernGroup]:
    """Class decorator: index the kind's RECORDS for `ModernGroup.apply`."""
    _ROLES[cls] = {kind: role for role, kind in enumerate(cls.RECORDS)}
    _ROLES[cls].update((kind, _MORE) for kind in cls.MORE_RECORDS)
    KIND_OF_RECORD.update((kind, cls) for kind in (*cls.RECORDS, *cls.MORE_RECORDS))
    return cls
