"""Group events: what changed in a group, derived from its state before and after a change.

How this works: `summarise` reduces a classic or consumer group to what the event stream
reports (state, generation or group epoch, members with their instance id, member epoch and
assignment); `diff` compares two summaries and returns the events between them, in a fixed
order (departures, joins, rebalance started, state, assignments, rebalance completed).
`EventTracker` keeps the last summary of each group with the group object and its change
counter (`version`), so looking at a group that did not change costs two dict lookups and
no summary: the caller may ask after every handler or timer without paying per heartbeat.

Summaries are built incrementally from the previous one, so a change costs in proportion
to the members it touched, not to the group: a classic group between rebalances only
gains and loses members (new ones are appended, so while nobody left they are the last
few; else the key sets are compared, at C speed); a consumer group changes only through
records, which name the members they touch. A summary says which member
entries differ from the one it was built on (`base`, `changed`), and `diff` looks only at
those. A full pass (every member) runs when a classic group becomes Stable (its new
assignments), when a consumer group's target epoch moves, or when nothing better is known.

The summaries cannot tell why a member is gone (it left, its session expired, it was
fenced): the handler that changed the group knows, and says so in its Result with a
`GroupChange` (what ran, and how a member it removed is reported). Only the groups a
Result names are looked at, so a steady heartbeat (which names none) costs nothing here.

A classic member's assignment is known only once its group is Stable (the leader's
SyncGroup); between rebalances a summary carries each member's last known assignment
forward, so `assignment_changed` compares against what was last reported. Classic
assignments are decoded from ConsumerProtocol bytes; other protocol types (connect, ...)
report partitions as None. The JSON layout is the shared contract of the
`__kgroup_events` topic (README, "Group events").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from itertools import islice
from typing import Any, Iterable, Mapping, Sequence

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.consumer_group import ConsumerGroup, ConsumerGroupMember, GroupState, MemberState
from kgroup.core.messages import STATIC_LEAVE_EPOCH
from kgroup.core.records import (
    ConsumerCurrentRecord,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
)
from kgroup.core.result import Departure, GroupChange
from kgroup.core.share_group import ShareGroup
from kgroup.core.state import ShardState

FORMAT_VERSION = 1
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
DEAD = "Dead"
EMPTY = "Empty"
PREPARING = ClassicGroupState.PREPARING_REBALANCE.value
STABLE = "Stable"
# The classic protocol type whose assignments are ConsumerProtocol bytes.
CONSUMER_PROTOCOL_TYPE = "consumer"

TopicPartitionList = tuple[tuple[str, int], ...]


class EventKind(Enum):
    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"
    MEMBER_FENCED = "member_fenced"
    REBALANCE_STARTED = "rebalance_started"
    REBALANCE_COMPLETED = "rebalance_completed"
    ASSIGNMENT_CHANGED = "assignment_changed"
    GROUP_STATE = "group_state"
    # Its coordinator moved (a cluster node took its group-metadata partition over, or
    # handed it on): the group itself did not change.
    COORDINATOR_LOADED = "coordinator_loaded"
    COORDINATOR_UNLOADED = "coordinator_unloaded"
    # A transaction committed offsets of the group (KIP-447): they are visible from now on.
    TXN_OFFSETS_COMMITTED = "txn_offsets_committed"


K = EventKind

# How a member a change removed is reported.
_GONE = {Departure.LEFT: K.MEMBER_LEFT, Departure.EXPIRED: K.MEMBER_EXPIRED, Departure.FENCED: K.MEMBER_FENCED}


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    instance_id: str | None
    member_epoch: int | None                 # consumer protocol only
    partitions: TopicPartitionList | None    # last known assignment; None: not decodable
    # What "the assignment changed" compares: the partitions, or the raw bytes of an
    # assignment that is not ConsumerProtocol.
    key: Any = ()
    # Consumer protocol: the member's reconciliation state is stable (with its epoch at the
    # target epoch, it counts as converged).
    reconciled: bool = True
    # The object the assignment was read from, so an unchanged member is not decoded again.
    source: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    protocol: str
    state: str
    generation: int
    members: Mapping[str, MemberSummary]     # in the group's member order
    # The generation (epoch) at which the group was last seen Stable, -1 if never: a
    # rebalance completes when the group is Stable at a later one. (A consumer group also
    # leaves Stable without a rebalance, while a static member is away with epoch -2.)
    settled: int = -1
    # Consumer protocol: the target assignment's epoch, and how many members are not yet
    # converged to it (what the group state is computed from, kept up to date per member).
    target_epoch: int = 0
    unconverged: int = 0
    # The members mapping this summary was built from, and the ids whose entries differ
    # from it (joined, gone or rebuilt): what `diff` needs to look at.
    base: Mapping[str, MemberSummary] | None = field(default=None, compare=False, repr=False)
    changed: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Classic: the group's removal count when this was taken (ClassicGroup.removals).
    removals: int = field(default=-1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GroupEvent:
    time_ms: int
    group: str
    protocol: str
    kind: EventKind
    generation: int
    state: str
    member: str | None = None
    instance: str | None = None
    member_epoch: int | None = None
    partitions: TopicPartitionList | None = None
    reason: str | None = None
    replaced: str | None = None              # member_joined of a static member's new id
    temporary: bool = False                  # member_left of a static member (epoch -2)
    # coordinator_loaded / coordinator_unloaded: the node that loaded (or unloaded) the
    # group, the node it came from (or goes to) if known, and how long the load took.
    node: int | None = None
    previous_node: int | None = None
    load_ms: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The event as the `__kgroup_events` contract lays it out."""
        out: dict[str, Any] = {
            "v": FORMAT_VERSION, "time_ms": self.time_ms, "group": self.group,
            "protocol": self.protocol, "kind": self.kind.value, "member": self.member,
            "instance": self.instance, "generation": self.generation,
            "member_epoch": self.member_epoch, "state": self.state,
            "partitions": None if self.partitions is None else [list(tp) for tp in self.partitions],
            "reason": self.reason,
        }
        if self.replaced is not None:
            out["replaced"] = self.replaced
        if self.temporary:
            out["temporary"] = True
        for key in ("node", "previous_node", "load_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def to_json(self) -> bytes:
        """Compact UTF-8 JSON with sorted keys: the record value."""
        return _ENCODE(self.as_dict()).encode()


# One encoder for all events (json.dumps with options builds a new one per call).
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


# ---- summaries ------------------------------------------------------------------------------

def summarise(group: ClassicGroup | ConsumerGroup | ShareGroup, topics: Mapping[str, tuple[str, int]],
              previous: GroupSummary | None = None, touched: Iterable[str] | None = None) -> GroupSummary:
    """What the event stream knows of `group`, built on `previous` (the summary of the same
    group before this change) when there is one.

    `topics` is the broker's topic image (name -> (topic id, partitions)), used to name the
    topics of consumer-protocol assignments (kept by topic id). `touched`: for a consumer
    group, the members named by the records replayed since `previous` (None: not known, so
    every member is looked at).
    """
    if isinstance(group, ConsumerGroup):
        return _summarise_consumer(group, topics, previous, touched)
    if isinstance(group, ShareGroup):
        return _summarise_share(group, topics, previous)
    return _summarise_classic(group, previous)


def _summarise_share(group: ShareGroup, topics: Mapping[str, tuple[str, int]],
                     previous: GroupSummary | None) -> GroupSummary:
    """A share group: members with their epochs and assignments (a partition may be in several),
    Stable while it has members. Share groups change only through records: a full pass."""
    names = {tid: name for name, (tid, _) in topics.items()}
    names.update((tid, name) for name, tid, _ in group.subscribed)
    base = previous.members if previous is not None and previous.protocol == SHARE else None
    members: dict[str, MemberSummary] = {}
    for mid, m in group.members.items():
        last = base.get(mid) if base is not None else None
        if last is not None and last.source is m.current:
            members[mid] = last
            continue
        partitions = tuple(sorted((names.get(t, t), p) for t, ps in m.current.assigned for p in ps))
        members[mid] = MemberSummary(mid, None, m.current.member_epoch, partitions, partitions, source=m.current)
    state = group.state().value
    return GroupSummary(group.group_id, SHARE, state, group.epoch, members,
                        _settled(state == STABLE, group.epoch, previous), group.target_epoch)


def _ordered(members: Mapping[str, Any], ids: Iterable[str]) -> list[str]:
    """`ids` in the order of `members` (cheap for the usual one or none)."""
    ids = set(ids)
    if len(ids) <= 1:
        return list(ids)
    return [mid for mid in members if mid in ids]


def _summarise_classic(group: ClassicGroup, previous: GroupSummary | None) -> GroupSummary:
    base = previous.members if previous is not None and previous.protocol == CLASSIC else None
    stable = group.state is ClassicGroupState.STABLE
    current = group.members
    added: list[str] | None = None
    if base is None:
        base_keys: Any = ()
        removed: list[str] = []
    elif previous.removals == group.removals:
        # Nobody left since: whoever is new was appended (no pass over the members).
        base_keys = base.keys()
        removed = []
        added = list(islice(reversed(current), len(current) - len(base)))[::-1]
    else:
        base_keys = base.keys()
        removed = [] if current.keys() == base_keys else _ordered(base, base_keys - current.keys())
    # A static member's new id inherits what its old id was last known to hold.
    gone_by_instance = {base[mid].instance_id: base[mid] for mid in removed
                        if base[mid].instance_id is not None}
    members: dict[str, MemberSummary]
    changed: list[str] = list(removed)
    if base is not None and not stable:
        # Mid-rebalance the assignment bytes are the old generation's (or reset): members
        # keep what was last reported, so only arrivals and departures can differ.
        if added is None:
            added = _ordered(current, current.keys() - base_keys) if removed or len(current) != len(base) else []
        if not removed and not added:
            members = base                               # shared: nothing changed
        else:
            members = dict(base)
            for mid in removed:
                del members[mid]
            for mid in added:
                m = current[mid]
                members[mid] = _carried(m, gone_by_instance.get(m.group_instance_id))
            changed += added
    else:
        decodable = group.protocol_type == CONSUMER_PROTOCOL_TYPE
        members = {}
        for mid, m in current.items():
            last = base.get(mid) if base is not None else None
            if not stable:
                members[mid] = _carried(m, last)
                changed.append(mid)
                continue
            if last is None and m.group_instance_id is not None:
                carried = gone_by_instance.get(m.group_instance_id)
            else:
                carried = last
            raw = m.assignment
            if last is not None and last.source is raw:
                summary = last                           # unchanged since last seen
            elif carried is not None and carried.source is raw:
                summary = MemberSummary(mid, m.group_instance_id, None, carried.partitions, carried.key,
                                        source=raw)
            else:
                summary = MemberSummary(mid, m.group_instance_id, None, *_classic_assignment(raw, decodable),
                                        source=raw)
            members[mid] = summary
            if summary is not last:
                changed.append(mid)
    return GroupSummary(group.group_id, CLASSIC, group.state.value, group.generation, members,
                        _settled(stable, group.generation, previous), base=base, changed=tuple(changed),
                        removals=group.removals)


def _carried(m: Any, last: MemberSummary | None) -> MemberSummary:
    """A classic member mid-rebalance: its last known assignment, carried forward."""
    if last is None:
        return MemberSummary(m.member_id, m.group_instance_id, None, (), ())
    return MemberSummary(m.member_id, m.group_instance_id, None, last.partitions, last.key, source=last.source)


def _classic_assignment(raw: bytes, decodable: bool) -> tuple[TopicPartitionList | None, Any]:
    """(partitions, change key) of classic assignment bytes."""
    if not raw:
        return (), ()
    if not decodable:
        return None, raw
    try:
        assignment = decode_assignment(raw)
    except ConsumerProtocolError:
        return None, raw
    partitions = tuple(sorted((str(t), int(p)) for t, ps in assignment.partitions for p in ps))
    return partitions, partitions


def _settled(stable: bool, generation: int, previous: GroupSummary | None) -> int:
    if stable:
        return generation
    return previous.settled if previous is not None else -1


_RECONCILED = MemberState.STABLE


class _TopicNames:
    """Topic id -> name for a consumer group's assignments, looked up only when needed."""

    __slots__ = ("group", "topics", "names")

    def __init__(self, group: ConsumerGroup, topics: Mapping[str, tuple[str, int]]) -> None:
        self.group, self.topics, self.names = group, topics, None

    def __call__(self, topic_id: str) -> str:
        if self.names is None:
            self.names = {tid: name for name, (tid, _) in self.topics.items()}
            self.names.update((tid, name) for name, tid, _ in self.group.subscribed)
        return self.names.get(topic_id, topic_id)


def _consumer_member(m: ConsumerGroupMember, last: MemberSummary | None, name: _TopicNames) -> MemberSummary:
    current = m.current
    instance = m.meta.instance_id
    if last is not None and last.source is current and last.instance_id == instance:
        return last
    if last is not None and last.partitions is not None and current.assigned == getattr(last.source, "assigned", None):
        partitions = last.partitions
    else:
        partitions = tuple(sorted((name(t), p) for t, ps in current.assigned for p in ps))
    return MemberSummary(m.member_id, instance, current.member_epoch, partitions, partitions,
                         current.state is _RECONCILED, source=current)


def _unconverged(s: MemberSummary, target_epoch: int) -> bool:
    return s.member_epoch != target_epoch or not s.reconciled


def _summarise_consumer(group: ConsumerGroup, topics: Mapping[str, tuple[str, int]],
                        previous: GroupSummary | None, touched: Iterable[str] | None) -> GroupSummary:
    base = previous.members if previous is not None and previous.protocol == CONSUMER else None
    name = _TopicNames(group, topics)
    target = group.target_epoch
    current = group.members
    changed: list[str] = []
    if base is not None and touched is not None:
        # Only the members the records named can differ.
        members = dict(base)
        unconverged = previous.unconverged
        for mid in touched:
            was = members.get(mid)
            m = current.get(mid)
            now = _consumer_member(m, was, name) if m is not None else None
            if now is was:
                continue
            changed.append(mid)
            if was is not None:
                unconverged -= _unconverged(was, previous.target_epoch)
            if now is None:
                del members[mid]
            else:
                members[mid] = now
                unconverged += _unconverged(now, previous.target_epoch)
        if target != previous.target_epoch:
            unconverged = sum(_unconverged(s, target) for s in members.values())
    else:
        members = {}
        for mid, m in current.items():
            was = base.get(mid) if base is not None else None
            members[mid] = now = _consumer_member(m, was, name)
            if now is not was:
                changed.append(mid)
        if base is not None:
            changed += _ordered(base, base.keys() - current.keys())
        unconverged = sum(_unconverged(s, target) for s in members.values())
    # As ConsumerGroup.state(), from the counts kept here rather than a pass over members.
    if not members:
        state = GroupState.EMPTY.value
    elif group.epoch > target:
        state = GroupState.ASSIGNING.value
    elif unconverged:
        state = GroupState.RECONCILING.value
    else:
        state = GroupState.STABLE.value
    return GroupSummary(group.group_id, CONSUMER, state, group.epoch, members,
                        _settled(state == STABLE, group.epoch, previous), target, unconverged,
                        base=base, changed=tuple(changed))


def _nothing(group_id: str, protocol: str) -> GroupSummary:
    """A group before it existed."""
    return GroupSummary(group_id, protocol, EMPTY, 0, {})


# ---- diff -----------------------------------------------------------------------------------

def diff(before: GroupSummary | None, after: GroupSummary | None, change: GroupChange,
         time_ms: int) -> list[GroupEvent]:
    """The events that take a group from `before` to `after` (None: it did not exist), as
    `change` (what ran, and how it removes members) brought them about."""
    if after is None:
        if before is None:
            return []
        after = GroupSummary(before.group_id, before.protocol, DEAD, before.generation, {}, before.settled)
    if before is None:
        before = _nothing(after.group_id, after.protocol)
    protocol, gid = after.protocol, after.group_id
    # Consumer and share groups move by epochs, with assignments as they change.
    consumer = protocol in (CONSUMER, SHARE)
    gone_kind = _GONE[change.departure]
    events: list[GroupEvent] = []

    def event(kind: EventKind, m: MemberSummary | None = None, *, state: str = after.state,
              generation: int = after.generation, **extra: Any) -> None:
        events.append(GroupEvent(
            time_ms, gid, protocol, kind, generation, state,
            member=m.member_id if m is not None else None,
            instance=m.instance_id if m is not None else None,
            member_epoch=m.member_epoch if m is not None and consumer else None, **extra))

    # 1. Membership: departures, then arrivals (a static member's new id replaces its old).
    #    Only the entries that differ are looked at: those `after` says it changed when it
    #    was built on `before`, else every one.
    old, new = before.members, after.members
    if after.base is old:
        touched = [mid for mid in after.changed if mid in new]
        gone = [old[mid] for mid in after.changed if mid not in new and mid in old]
        added = [new[mid] for mid in touched if mid not in old]
    else:
        touched = [mid for mid, m in new.items() if old.get(mid) != m]
        gone = [m for mid, m in old.items() if mid not in new]
        added = [new[mid] for mid in touched if mid not in old]
    gone_by_instance = {m.instance_id: m for m in gone if m.instance_id is not None}
    replaced: dict[str, MemberSummary] = {}
    for m in added:
        if m.instance_id is not None and m.instance_id in gone_by_instance:
            replaced[m.member_id] = gone_by_instance.pop(m.instance_id)
    replaced_ids = {m.member_id for m in replaced.values()}
    for m in gone:
        if m.member_id not in replaced_ids:
            event(gone_kind, m, reason=change.what)
    for m in added:
        was = replaced.get(m.member_id)
        event(K.MEMBER_JOINED, m, replaced=was.member_id if was is not None else None,
              reason="static member restarted" if was is not None else None)
    for mid in touched:
        m, was = new[mid], old.get(mid)
        if (m.member_epoch == STATIC_LEAVE_EPOCH and was is not None
                and was.member_epoch != STATIC_LEAVE_EPOCH):
            event(K.MEMBER_LEFT, m, temporary=True, reason=change.what)
    why = events[0].kind.value if events else change.what

    # 2. Rebalance and state. Classic: a rebalance starts when the group enters
    #    PreparingRebalance (or passes through it within one change: the generation moved);
    #    consumer: when the group epoch moves. It completes when the group is Stable at a
    #    generation or epoch later than the last one it was Stable at.
    alive = after.state != DEAD
    if consumer:
        started = alive and after.generation > before.generation
    else:
        started = alive and (
            (after.state == PREPARING and before.state != PREPARING)
            or (after.generation > before.generation and before.state != PREPARING))
    last_state = before.state
    if started:
        if consumer:
            event(K.REBALANCE_STARTED, reason=why)
            last_state = after.state
        else:
            event(K.REBALANCE_STARTED, state=PREPARING, generation=before.generation, reason=why)
            last_state = PREPARING
    completed = after.state == STABLE and after.generation > before.settled
    if after.state != last_state and not completed:
        event(K.GROUP_STATE, state=after.state)

    # 3. Assignments: a classic group's only at Stable; a consumer group's as they move.
    #    Before the completion they lead to, so a reader that closes a rebalance at
    #    rebalance_completed has seen every partition it moved.
    if consumer or after.state == STABLE:
        for mid in touched:
            m = new[mid]
            was = old.get(mid) or replaced.get(mid)
            if m.key != (was.key if was is not None else ()):
                event(K.ASSIGNMENT_CHANGED, m, partitions=m.partitions)
    if completed:
        event(K.REBALANCE_COMPLETED)
    return events


# ---- tracking -------------------------------------------------------------------------------

class EventTracker:
    """The last summary of every group seen, and the events each change brings."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # group id -> (group object, its version, summary)
        self._seen: dict[str, tuple[Any, int, GroupSummary]] = {}

    def prime(self, shard: ShardState) -> None:
        """Take every group as it is now as the starting point (after loading a log)."""
        for groups in (shard.groups, shard.consumer_groups, shard.share_groups):
            for group_id, group in groups.items():
                self._seen[group_id] = (group, group.version, summarise(group, shard.topics))

    def coordinator_moved(self, shard: ShardState, kind: EventKind, time_ms: int, node: int,
                          previous_node: int | None = None, load_ms: int | None = None) -> list[GroupEvent]:
        """One event per group of a shard this node just loaded (after `prime`) or is handing
        on (`kind` COORDINATOR_LOADED / COORDINATOR_UNLOADED), in group id order."""
        events = []
        for groups in (shard.groups, shard.consumer_groups):
            for group_id in sorted(groups):
                seen = self._seen.get(group_id)
                summary = seen[2] if seen is not None else summarise(groups[group_id], shard.topics)
                events.append(GroupEvent(time_ms, group_id, summary.protocol, kind, summary.generation,
                                         summary.state, node=node, previous_node=previous_node, load_ms=load_ms))
        if kind is K.COORDINATOR_UNLOADED:
            for groups in (shard.groups, shard.consumer_groups):
                for group_id in groups:
                    self._seen.pop(group_id, None)
        return events

    def observe(self, shard: ShardState, changes: Iterable[GroupChange], time_ms: int,
                records: Sequence[Any] = ()) -> list[GroupEvent]:
        """Events of the groups a Result's `changes` name since they were last observed,
        oldest first.

        `records`: what the change replayed; they tell which consumer-group members it
        touched, so only those are summarised again.
        """
        events: list[GroupEvent] = []
        seen = self._seen
        touched = None
        looked: set[str] = set()
        for change in changes:
            group_id = change.group_id
            if change.committed is not None:
                events += self._committed(shard, change, time_ms)
            if group_id in looked:
                continue
            looked.add(group_id)
            group = shard.consumer_groups.get(group_id)
            if group is None:
                group = shard.groups.get(group_id)
            if group is None:
                group = shard.share_groups.get(group_id)
            entry = seen.get(group_id)
            if group is None:
                if entry is not None:
                    del seen[group_id]
                    events += diff(entry[2], None, change, time_ms)
                continue
            if entry is not None and entry[0] is group and entry[1] == group.version:
                continue
            before = entry[2] if entry is not None else None
            hint = None
            if records and entry is not None and entry[0] is group and isinstance(group, ConsumerGroup):
                if touched is None:
                    touched = consumer_changes(records)
                count, members = touched.get(group_id, (0, ()))
                if group.version - entry[1] == count:      # every change came from these records
                    hint = members
            after = summarise(group, shard.topics, before, hint)
            seen[group_id] = (group, group.version, after)
            events += diff(before, after, change, time_ms)
        return events

    def _committed(self, shard: ShardState, change: GroupChange, time_ms: int) -> list[GroupEvent]:
        """The event of offsets a committed transaction made visible (nothing else changes
        in the group: its summary is read, not taken again)."""
        entry = self._seen.get(change.group_id)
        if entry is not None:
            summary = entry[2]
        else:
            group = shard.consumer_groups.get(change.group_id) or shard.groups.get(change.group_id)
            if group is None:
                return []
            summary = summarise(group, shard.topics)
        return [GroupEvent(time_ms, change.group_id, summary.protocol, K.TXN_OFFSETS_COMMITTED,
                           summary.generation, summary.state, partitions=change.committed, reason=change.what)]

    def summary(self, group_id: str) -> GroupSummary | None:
        """The last summary taken of a group (None if not seen or gone)."""
        entry = self._seen.get(group_id)
        return entry[2] if entry is not None else None

    def __len__(self) -> int:
        return len(self._seen)


_CONSUMER_RECORDS = frozenset(
    {ConsumerGroupEpochRecord, ConsumerMemberRecord, ConsumerTargetRecord, ConsumerTargetEpochRecord,
     ConsumerCurrentRecord})


def consumer_changes(records: Iterable[Any]) -> dict[str, tuple[int, list[str]]]:
    """Per group: how many consumer-group records, and the members they name (in order)."""
    out: dict[str, list] = {}
    for record in records:
        kind = type(record)
        if kind not in _CONSUMER_RECORDS:
            continue
        entry = out.get(record.group_id)
        if entry is None:
            entry = out[record.group_id] = [0, {}]
        entry[0] += 1
        if kind is ConsumerMemberRecord or kind is ConsumerCurrentRecord:
            entry[1][record.member_id] = None
    return {group_id: (count, list(members)) for group_id, (count, members) in out.items()}
