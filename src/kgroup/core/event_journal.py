"""The group events of one Result, collected as its handler changes groups.

How this works: a handler that may change a group names it (`ResultBuilder.changed`) before
it changes anything; the journal then takes the group's status (kind, state, generation or
group epoch, the epoch it last settled at). What the handler does next becomes the group's
`GroupDelta` (group_events.py) when the Result is built (`finish`, after the staged changes
ran), by the kind's family:

- a classic group changes in place, so its handler reports each change as it makes it:
  a member that joined (`joined`, with the static member whose place it took), one it
  removed (`gone`), each member's new assignment once the group is Stable (`assigned`);
  the group's state and generation after are read from it;
- a modern group (consumer, share, streams) changes only through its records, which replay
  applies after the Result is built, so the journal reads the Result's records of that
  group (one pass over them, as replay would take them: a member record adds or removes a
  member, a current record moves its assignment and epoch, an epoch or target-epoch record
  moves the group) from the group as it is before them: who joined, went, stepped out
  (epoch -2) or holds a new assignment (what the kind shows of it: `held_by_name`), and the
  state the group reaches (`state_after`). A group that changes kind (online migration
  between classic and consumer) is read the same way, its members compared by id between
  the group before and the group after.

Only named groups are looked at, so a steady heartbeat (which names none) costs nothing
here, and a change costs in proportion to the members it touched (a new target epoch costs
one pass over the members, to count who is not at it yet).
"""

from __future__ import annotations

from typing import Any

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupMember
from kgroup.core.group_events import (
    GroupDelta,
    GroupEvent,
    GroupStatus,
    MemberSnap,
    committed_event,
    compose,
)
from kgroup.core.kinds import find_group
from kgroup.core.modern_group import (
    CURRENT,
    EPOCH,
    KIND_OF_RECORD,
    MEMBER,
    TARGET_EPOCH,
    ModernGroup,
    phase_of,
    role_of,
)
from kgroup.core.result import UNKNOWN, Departure
from kgroup.core.state import ShardState
from kgroup.group_types import STABLE

# A static member's epoch while it steps out for a restart (KIP-848).
AWAY_EPOCH = -2
# The classic protocol type whose assignments are ConsumerProtocol bytes.
CONSUMER_PROTOCOL_TYPE = "consumer"


def status_of(group: Any) -> GroupStatus:
    """A group's status as the events see it (the epoch it settled at, when it is not Stable
    now, from what the group kept)."""
    state, generation = group.status()
    if state == STABLE:
        settled = generation
    else:
        settled = getattr(group, "settled", -1)
    return GroupStatus(group.TYPE, state, generation, settled)


def classic_key(protocol_type: str, raw: bytes) -> tuple[Any, Any]:
    """(partitions, change key) of classic assignment bytes: decoded ConsumerProtocol
    partitions, or None with the raw bytes as the key."""
    if not raw:
        return (), ()
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None, raw
    try:
        assignment = decode_assignment(raw)
    except ConsumerProtocolError:
        return None, raw
    partitions = tuple(sorted((str(t), int(p)) for t, ps in assignment.partitions for p in ps))
    return partitions, partitions


def classic_snap(group: ClassicGroup, member: ClassicGroupMember) -> MemberSnap:
    """A classic member with the assignment last reported for it."""
    partitions, key = classic_key(group.protocol_type, member.reported)
    return MemberSnap(member.member_id, member.group_instance_id, None, partitions, key)


class _Facts:
    """What a handler reported of one group beyond naming it (made on first use)."""

    __slots__ = ("committed", "joined", "gone", "order", "assigned")

    def __init__(self) -> None:
        self.committed: list[GroupEvent] = []
        # Classic: member id -> (member, the static member it replaced), in join order;
        # member id -> member, as removed; the members' order when the first one went;
        # new assignments at Stable.
        self.joined: dict[str, tuple[MemberSnap, MemberSnap | None]] = {}
        self.gone: dict[str, MemberSnap] = {}
        self.order: dict[str, int] | None = None
        self.assigned: list[MemberSnap] = []


class _Entry:
    """One named group of the Result."""

    __slots__ = ("group_id", "what", "departure", "group", "classic", "state", "generation", "_before", "facts")

    def __init__(self, group_id: str, what: str, departure: Departure, group: Any) -> None:
        self.group_id, self.what, self.departure, self.group = group_id, what, departure, group
        # A classic group changes in place: its state and generation now, read before it
        # does (a modern group changes only at replay: read when needed).
        self.classic = classic = type(group) is ClassicGroup
        if classic:
            self.state, self.generation = group.state, group.generation
        # A modern group's status, read now: its records change it only at replay, but its
        # state may read runtime state a staged change moves (a streams group's configured
        # topology), and staged changes run before the events are made.
        self._before: GroupStatus | None = status_of(group) if group is not None and not classic else None
        self.facts: _Facts | None = None

    def more(self) -> _Facts:
        facts = self.facts
        if facts is None:
            facts = self.facts = _Facts()
        return facts

    @property
    def before(self) -> GroupStatus | None:
        """The group's status when it was named (None: there was no group)."""
        if self._before is None and self.group is not None:
            group = self.group
            if self.classic:
                stable = self.state.value == STABLE
                self._before = GroupStatus(group.TYPE, self.state.value, self.generation,
                                           self.generation if stable else group.settled)
            else:
                self._before = status_of(group)
        return self._before


class EventJournal:
    """The events of one Result (see the module's docstring)."""

    __slots__ = ("shard", "now_ms", "entries")

    def __init__(self, shard: ShardState, now_ms: int) -> None:
        self.shard = shard
        self.now_ms = now_ms
        self.entries: dict[str, _Entry] = {}

    # ---- what a handler says --------------------------------------------------------------

    def named(self, group_id: str, what: str, departure: Departure,
              committed: tuple[tuple[str, int], ...] | None, group: Any = UNKNOWN) -> None:
        """The handler is about to change `group_id` (for `what`, removing members the
        `departure` way); `committed`: offsets a transaction made visible in it; `group`:
        the group, if the handler has it at hand."""
        entry = self.entries.get(group_id)
        if entry is None:
            if group is UNKNOWN:
                group = find_group(self.shard, group_id)
            entry = self.entries[group_id] = _Entry(group_id, what, departure, group)
        if committed is not None and entry.before is not None:
            entry.more().committed.append(committed_event(group_id, entry.before, committed, what, self.now_ms))

    def joined(self, group: ClassicGroup, member: ClassicGroupMember, replaced: ClassicGroupMember | None) -> None:
        """A member joined a classic group (in the place of `replaced`, a static member's old id)."""
        entry = self.entries.get(group.group_id)
        if entry is not None:
            was = MemberSnap(replaced.member_id, replaced.group_instance_id) if replaced is not None else None
            entry.more().joined[member.member_id] = (MemberSnap(member.member_id, member.group_instance_id), was)

    def gone(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        """A member is about to be removed from a classic group."""
        entry = self.entries.get(group.group_id)
        if entry is None:
            return
        facts = entry.more()
        mid = member.member_id
        came = facts.joined.pop(mid, None)
        if came is not None:
            # It came and went within this change: nothing to report of it, but the static
            # member whose place it took is gone after all.
            if came[1] is not None:
                facts.gone[came[1].member_id] = came[1]
            return
        if facts.order is None:
            facts.order = {m: i for i, m in enumerate(group.members)}
        facts.gone[mid] = MemberSnap(mid, member.group_instance_id)

    def assigned(self, group: ClassicGroup, member: ClassicGroupMember, assignment: bytes) -> None:
        """A classic group going Stable gives `member` `assignment`, other bytes than it was
        last reported with (reported if it decodes to another assignment too)."""
        entry = self.entries.get(group.group_id)
        if entry is None:
            return
        partitions, key = classic_key(group.protocol_type, assignment)
        if key != classic_key(group.protocol_type, member.reported)[1]:
            entry.more().assigned.append(MemberSnap(member.member_id, member.group_instance_id, None,
                                                    partitions, key))

    # ---- the events -----------------------------------------------------------------------

    def finish(self, records: list[Any]) -> tuple[GroupEvent, ...]:
        """The events of every named group, in the order they were named."""
        modern: dict[str, list[Any]] = {}
        if records:
            kinds = KIND_OF_RECORD
            for record in records:
                if type(record) in kinds:
                    modern.setdefault(record.group_id, []).append(record)
        events: list[GroupEvent] = []
        groups = self.shard.groups
        for entry in self.entries.values():
            facts = entry.facts
            if facts is not None and facts.committed:
                events += facts.committed
            recs = modern.get(entry.group_id) if modern else None
            if recs:
                delta = self._modern(entry, recs)
            else:
                group = entry.group
                if (entry.classic and (facts is None or not (facts.joined or facts.gone or facts.assigned))
                        and group.state is entry.state and group.generation == entry.generation
                        and groups.get(entry.group_id) is group):
                    group.announced = True      # nothing moved (a rejoin in a rebalance, a follower's sync)
                    continue
                delta = self._classic(entry)
            if delta is not None:
                events += compose(delta, self.now_ms)
        return tuple(events) if events else ()

    def _classic(self, entry: _Entry) -> GroupDelta | None:
        before = entry.group
        group = self.shard.groups.get(entry.group_id)
        if group is not None and not group.live:
            group = None
        if group is None and before is None:
            return None
        if before is not None and not isinstance(before, ClassicGroup):
            return None                     # a modern group that no record changed
        facts = entry.facts or _Facts()
        gone = list(facts.gone.values())
        if facts.order is not None and len(gone) > 1:
            order = facts.order
            gone.sort(key=lambda m: order.get(m.member_id, len(order)))
        if group is None:
            if not before.announced:
                return None                 # made by offset commits and never told of
            # Deleted (or expired): whoever was still in it went with it.
            gone += [MemberSnap(mid, m.group_instance_id) for mid, m in before.members.items()
                     if mid not in facts.gone]
            after = None
        else:
            after = status_of(group)
            if entry.before is not None and entry.before.state == STABLE and after.state != STABLE:
                group.settled = entry.before.generation     # for the next change
            group.announced = True
        return GroupDelta(entry.group_id, entry.what, entry.departure, entry.before, after, gone,
                          list(facts.joined.values()), [], facts.assigned)

    def _modern(self, entry: _Entry, records: list[Any]) -> GroupDelta:
        cls = KIND_OF_RECORD[type(records[0])]
        before = entry.group
        same = before if type(before) is cls else None
        other = before if before is not None and same is None else None
        # 1. The records, as replay will take them: member id -> [in it, metadata, current].
        epoch = same.epoch if same is not None else 0
        target_epoch = same.target_epoch if same is not None else 0
        subscribed = same.subscribed if same is not None else ()
        deleted = False
        touched: dict[str, list[Any]] = {}
        old = same.members if same is not None else {}
        for record in records:
            role = role_of(record)
            if role == EPOCH:
                if record.epoch is None:
                    deleted = True
                else:
                    epoch, subscribed = record.epoch, record.subscribed
            elif role == TARGET_EPOCH:
                if record.epoch is not None:
                    target_epoch = record.epoch
            elif role == MEMBER or role == CURRENT:
                state = touched.get(record.member_id)
                if state is None:
                    m = old.get(record.member_id)
                    state = touched[record.member_id] = ([True, m.meta, m.current] if m is not None
                                                         else [False, None, cls.NEW_CURRENT])
                if role == MEMBER:
                    if record.value is None:
                        state[0] = False
                    elif state[0]:
                        state[1] = record.value
                    else:
                        state[0], state[1], state[2] = True, record.value, cls.NEW_CURRENT
                elif record.value is not None and state[0]:
                    state[2] = record.value
        if deleted:
            return self._modern_gone(entry, same)
        # 2. The group after: its members, and how many are not at the target yet.
        count = len(old)
        unconverged = same.unconverged if same is not None else 0
        converged = cls.is_converged
        recount = same is None or target_epoch != same.target_epoch
        for mid, (present, _, current) in touched.items():
            was = old.get(mid)
            count += present - (was is not None)
            if not recount:
                if was is not None:
                    unconverged -= not converged(was.current, target_epoch)
                if present:
                    unconverged += not converged(current, target_epoch)
        if recount:
            # Over the whole group (the kind's count, at C speed for a consumer group), then
            # the few members the records touch: their old values out, their new ones in.
            count_of = cls.unconverged_among
            unconverged = same.unconverged_at(target_epoch) if same is not None else 0
            unconverged -= count_of([old[mid].current for mid in touched if mid in old], target_epoch)
            unconverged += count_of([current for present, _, current in touched.values() if present],
                                    target_epoch)
        state = cls.state_after(same, phase_of(count, epoch, target_epoch, unconverged), records).value
        after = GroupStatus(cls.TYPE, state, epoch)
        if same is not None and entry.before.state == STABLE and state != STABLE:
            same.settled = same.epoch       # the epoch it settled at, for the next change
        # 3. Its members' moves, in the order the records name them: who went first (a
        #    static member's new id takes the place of the old one that went), then who
        #    joined, stepped out (epoch -2) or holds new partitions.
        delta = GroupDelta(entry.group_id, entry.what, entry.departure, entry.before, after)
        held = cls.held_by_name(same, records, _TopicNames(self.shard.topics, subscribed))
        by_instance: dict[str, tuple[MemberSnap, Any]] = {}
        for mid, (present, _, _) in touched.items():
            m = old.get(mid)
            if not present and m is not None:
                snap = MemberSnap(mid, _instance(m.meta), m.current.member_epoch)
                delta.departed.append(snap)
                if snap.instance_id is not None:
                    by_instance[snap.instance_id] = (snap, m.current)
        for mid, (present, meta, current) in touched.items():
            if not present:
                continue
            instance = _instance(meta)
            m = old.get(mid)
            if m is not None:
                if m.current is current and _instance(m.meta) == instance:
                    continue                # nothing it reports moved
                now = MemberSnap(mid, instance, current.member_epoch)
                if current.member_epoch == AWAY_EPOCH and m.current.member_epoch != AWAY_EPOCH:
                    delta.away.append(now)
                if current.assigned != m.current.assigned:
                    parts = held(current)
                    if parts != held(m.current):
                        delta.assigned.append(_with(now, parts))
                continue
            parts = held(current)
            now = MemberSnap(mid, instance, current.member_epoch, parts, parts)
            if other is not None and mid in other.members:
                # A classic member of a group that became a consumer group: it stays.
                if parts != classic_snap(other, other.members[mid]).key:
                    delta.assigned.append(now)
                continue
            replaced = by_instance.pop(instance, None) if instance is not None else None
            delta.joined.append((now, replaced[0] if replaced is not None else None))
            if parts != (held(replaced[1]) if replaced is not None else ()):
                delta.assigned.append(now)
        return delta

    def _modern_gone(self, entry: _Entry, same: ModernGroup | None) -> GroupDelta | None:
        """A modern group deleted: gone for good, or turned classic (a downgrade)."""
        if same is None:
            return None
        classic = self.shard.groups.get(entry.group_id)
        if classic is not None and classic.live:
            gone = [_modern_snap(mid, m.meta, m.current) for mid, m in same.members.items()
                    if mid not in classic.members]
            return GroupDelta(entry.group_id, entry.what, entry.departure, entry.before, status_of(classic), gone)
        gone = [_modern_snap(mid, m.meta, m.current) for mid, m in same.members.items()]
        return GroupDelta(entry.group_id, entry.what, entry.departure, entry.before, None, gone)


def _instance(meta: Any) -> str | None:
    return getattr(meta, "instance_id", None)


def _with(snap: MemberSnap, partitions: Any) -> MemberSnap:
    return MemberSnap(snap.member_id, snap.instance_id, snap.member_epoch, partitions, partitions)


class _TopicNames:
    """Topic id -> name for a modern group's assignments, looked up only when needed."""

    __slots__ = ("topics", "subscribed", "names")

    def __init__(self, topics: dict[str, tuple[str, int]], subscribed: Any) -> None:
        self.topics, self.subscribed, self.names = topics, subscribed, None

    def __call__(self, topic_id: str) -> str:
        if self.names is None:
            self.names = {tid: name for name, (tid, _) in self.topics.items()}
            self.names.update((tid, name) for name, tid, _ in self.subscribed)
        return self.names.get(topic_id, topic_id)


def _modern_snap(member_id: str, meta: Any, current: Any) -> MemberSnap:
    """A modern member as a departure reports it."""
    return MemberSnap(member_id, _instance(meta), current.member_epoch)
