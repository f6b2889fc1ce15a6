"""Group events: what changed in a group, derived from its state before and after a change.

How this works: `summarise` reduces a classic or consumer group to what the event stream
reports (state, generation or group epoch, members with their instance id, member epoch and
assignment); `diff` compares two summaries and returns the events between them, in a fixed
order (departures, joins, rebalance started, state, assignments, rebalance completed).
`EventTracker` keeps the last summary of each group with the group object and its change
counter (`version`), so looking at a group that did not change costs two dict lookups and
no summary: the caller may ask after every handler or timer without paying per heartbeat.

The summaries cannot tell why a member is gone (it left, its session expired, it was
fenced): the caller knows which request or timer ran and says so with a `Cause`.

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
from typing import Any, Iterable, Mapping

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.consumer_group import ConsumerGroup
from kgroup.core.messages import STATIC_LEAVE_EPOCH
from kgroup.core.state import ShardState

FORMAT_VERSION = 1
CLASSIC = "classic"
CONSUMER = "consumer"
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


K = EventKind


@dataclass(frozen=True, slots=True)
class Cause:
    """What ran: a request or timer name, and how a member it removed is reported.

    `unrecorded`: the handler may change a group without writing a record (classic groups
    live in memory between rebalances). A handler without it changes a group only through
    records, so a call that wrote none needs no look (the steady heartbeat).
    """

    what: str
    gone: EventKind = EventKind.MEMBER_LEFT
    unrecorded: bool = True


# GroupCoordinator handler names -> cause. Handlers not listed never change a group as the
# event stream sees it (commits, fetches, describes, lists).
REQUEST_CAUSES: dict[str, Cause] = {
    # The only member a JoinGroup removes is one past group.max.size.
    "join_group": Cause("JoinGroup", K.MEMBER_FENCED),
    "sync_group": Cause("SyncGroup"),
    "leave_group": Cause("LeaveGroup"),
    "delete_groups": Cause("DeleteGroups"),
    "heartbeat": Cause("Heartbeat", unrecorded=False),
    "consumer_group_heartbeat": Cause("ConsumerGroupHeartbeat", unrecorded=False),
}
TOPICS_CHANGED = Cause("topic metadata changed", unrecorded=False)


# Timer operations (core/timers.py kinds) -> why a member they remove is gone.
TIMER_CAUSES: dict[str, Cause] = {
    "heartbeat": Cause("session timeout", K.MEMBER_EXPIRED),
    "join": Cause("rebalance timeout", K.MEMBER_EXPIRED),
    "initial-join": Cause("initial rebalance delay", K.MEMBER_EXPIRED),
    "sync": Cause("sync timeout", K.MEMBER_EXPIRED),
    "consumer-session": Cause("session timeout", K.MEMBER_EXPIRED),
    "consumer-revoke": Cause("revocation timeout", K.MEMBER_FENCED),
    "expire-offsets": Cause("offsets expired", K.MEMBER_EXPIRED),
}


def timer_cause(kind: str) -> Cause:
    return TIMER_CAUSES.get(kind) or Cause(kind, K.MEMBER_EXPIRED)


def request_groups(request: Any) -> tuple[str, ...]:
    """The group ids a core request names (one, or a tuple of them for admin calls)."""
    group_id = getattr(request, "group_id", None)
    if group_id is not None:
        return (group_id,)
    if isinstance(request, tuple):
        return tuple(g for g in request if isinstance(g, str))
    return ()


def record_groups(records: Iterable[Any]) -> list[str]:
    """The group ids of `records`, each once, in order of first appearance."""
    out: dict[str, None] = {}
    last = None
    for record in records:
        group_id = record.group_id
        if group_id != last:
            out[group_id] = None
            last = group_id
    return list(out)


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    instance_id: str | None
    member_epoch: int | None                 # consumer protocol only
    partitions: TopicPartitionList | None    # last known assignment; None: not decodable
    # What "the assignment changed" compares: the partitions, or the raw bytes of an
    # assignment that is not ConsumerProtocol.
    key: Any = ()
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
        return out

    def to_json(self) -> bytes:
        """Compact UTF-8 JSON with sorted keys: the record value."""
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":")).encode()


# ---- summaries ------------------------------------------------------------------------------

def summarise(group: ClassicGroup | ConsumerGroup, topics: Mapping[str, tuple[str, int]],
              previous: GroupSummary | None = None) -> GroupSummary:
    """What the event stream knows of `group`; `previous` carries classic assignments
    forward between rebalances and saves decoding members that did not change.

    `topics` is the broker's topic image (name -> (topic id, partitions)), used to name
    the topics of consumer-protocol assignments (which are kept by topic id).
    """
    if isinstance(group, ConsumerGroup):
        return _summarise_consumer(group, topics, previous)
    return _summarise_classic(group, previous)


def _summarise_classic(group: ClassicGroup, previous: GroupSummary | None) -> GroupSummary:
    before = previous.members if previous is not None and previous.protocol == CLASSIC else {}
    by_instance = {m.instance_id: m for m in before.values() if m.instance_id is not None}
    stable = group.state is ClassicGroupState.STABLE
    decodable = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    members: dict[str, MemberSummary] = {}
    for member_id, m in group.members.items():
        last = before.get(member_id)
        if last is None and m.group_instance_id is not None:
            last = by_instance.get(m.group_instance_id)     # a static member's new id
        if not stable:
            # Mid-rebalance the bytes are the old generation's (or reset): keep what was
            # last reported until the group is Stable again.
            partitions, key = (last.partitions, last.key) if last is not None else ((), ())
            members[member_id] = MemberSummary(member_id, m.group_instance_id, None, partitions, key,
                                               last.source if last is not None else None)
            continue
        raw = m.assignment
        if last is not None and last.source is raw:
            partitions, key = last.partitions, last.key
        elif not raw:
            partitions, key = (), ()
        elif decodable:
            partitions = _decoded(raw)
            key = partitions if partitions is not None else raw
        else:
            partitions, key = None, raw
        members[member_id] = MemberSummary(member_id, m.group_instance_id, None, partitions, key, raw)
    return GroupSummary(group.group_id, CLASSIC, group.state.value, group.generation, members,
                        _settled(stable, group.generation, previous))


def _settled(stable: bool, generation: int, previous: GroupSummary | None) -> int:
    if stable:
        return generation
    return previous.settled if previous is not None else -1


def _decoded(raw: bytes) -> TopicPartitionList | None:
    try:
        assignment = decode_assignment(raw)
    except ConsumerProtocolError:
        return None
    return tuple(sorted((str(t), int(p)) for t, ps in assignment.partitions for p in ps))


def _summarise_consumer(group: ConsumerGroup, topics: Mapping[str, tuple[str, int]],
                        previous: GroupSummary | None) -> GroupSummary:
    before = previous.members if previous is not None and previous.protocol == CONSUMER else {}
    names = {tid: name for name, tid, _ in group.subscribed}
    members: dict[str, MemberSummary] = {}
    for member_id, m in group.members.items():
        current = m.current
        last = before.get(member_id)
        if last is not None and last.source is current:
            partitions = last.partitions
        else:
            missing = [t for t, _ in current.assigned if t not in names]
            if missing:
                names.update({tid: name for name, (tid, _) in topics.items()})
            partitions = tuple(sorted((names.get(t, t), p) for t, ps in current.assigned for p in ps))
        members[member_id] = MemberSummary(member_id, m.meta.instance_id, current.member_epoch,
                                           partitions, partitions, current)
    state = group.state().value
    return GroupSummary(group.group_id, CONSUMER, state, group.epoch, members,
                        _settled(state == STABLE, group.epoch, previous))


def _nothing(group_id: str, protocol: str) -> GroupSummary:
    """A group before it existed."""
    return GroupSummary(group_id, protocol, EMPTY, 0, {})


# ---- diff -----------------------------------------------------------------------------------

def diff(before: GroupSummary | None, after: GroupSummary | None, cause: Cause,
         time_ms: int) -> list[GroupEvent]:
    """The events that take a group from `before` to `after` (None: it did not exist)."""
    if after is None:
        if before is None:
            return []
        after = GroupSummary(before.group_id, before.protocol, DEAD, before.generation, {}, before.settled)
    if before is None:
        before = _nothing(after.group_id, after.protocol)
    protocol, gid = after.protocol, after.group_id
    consumer = protocol == CONSUMER
    events: list[GroupEvent] = []

    def event(kind: EventKind, m: MemberSummary | None = None, *, state: str = after.state,
              generation: int = after.generation, **extra: Any) -> None:
        events.append(GroupEvent(
            time_ms, gid, protocol, kind, generation, state,
            member=m.member_id if m is not None else None,
            instance=m.instance_id if m is not None else None,
            member_epoch=m.member_epoch if m is not None and consumer else None, **extra))

    # 1. Membership: departures, then arrivals (a static member's new id replaces its old).
    old, new = before.members, after.members
    gone = [m for mid, m in old.items() if mid not in new]
    added = [m for mid, m in new.items() if mid not in old]
    gone_by_instance = {m.instance_id: m for m in gone if m.instance_id is not None}
    replaced: dict[str, MemberSummary] = {}
    for m in added:
        if m.instance_id is not None and m.instance_id in gone_by_instance:
            replaced[m.member_id] = gone_by_instance.pop(m.instance_id)
    replaced_ids = {m.member_id for m in replaced.values()}
    for m in gone:
        if m.member_id not in replaced_ids:
            event(cause.gone, m, reason=cause.what)
    for m in added:
        was = replaced.get(m.member_id)
        event(K.MEMBER_JOINED, m, replaced=was.member_id if was is not None else None,
              reason="static member restarted" if was is not None else None)
    for mid, m in new.items():
        was = old.get(mid)
        if (m.member_epoch == STATIC_LEAVE_EPOCH and was is not None
                and was.member_epoch != STATIC_LEAVE_EPOCH):
            event(K.MEMBER_LEFT, m, temporary=True, reason=cause.what)
    why = events[0].kind.value if events else cause.what

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
        for mid, m in new.items():
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
        for groups in (shard.groups, shard.consumer_groups):
            for group_id, group in groups.items():
                self._seen[group_id] = (group, group.version, summarise(group, shard.topics))

    def observe(self, shard: ShardState, group_ids: Iterable[str], cause: Cause,
                time_ms: int) -> list[GroupEvent]:
        """Events of the named groups since they were last observed, oldest first."""
        events: list[GroupEvent] = []
        seen = self._seen
        for group_id in group_ids:
            group = shard.consumer_groups.get(group_id)
            if group is None:
                group = shard.groups.get(group_id)
            entry = seen.get(group_id)
            if group is None:
                if entry is not None:
                    del seen[group_id]
                    events += diff(entry[2], None, cause, time_ms)
                continue
            if entry is not None and entry[0] is group and entry[1] == group.version:
                continue
            before = entry[2] if entry is not None else None
            after = summarise(group, shard.topics, before)
            seen[group_id] = (group, group.version, after)
            events += diff(before, after, cause, time_ms)
        return events

    def __len__(self) -> int:
        return len(self._seen)
