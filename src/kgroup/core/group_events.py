"""Group events: the typed events every group change carries in its Result, and their
`__kgroup_events` format.

How this works: a handler that changes a group says what it did to it, as it does it (the
Result's event journal, event_journal.py, collects it): which members joined (a static
member's new id in its old one's place), which went and how (left, expired, fenced: the
handler knows why), which stepped out for a moment (a static member's epoch -2), whose
assignment changed and to what, and the group's state and generation (or group epoch)
before and after. That is a `GroupDelta`; `compose` turns it into the events, in the fixed
order the contract gives (departures, joins, a rebalance started, the state, assignments,
the rebalance completed):

- a classic group's rebalance starts when it enters PreparingRebalance (or passes through it
  within one change: its generation moved); a modern group's when its group epoch moves;
- a rebalance completes when the group is Stable at a later generation or epoch than the
  last one it was Stable at (`GroupStatus.settled`: a consumer group also leaves Stable
  without a rebalance while a static member is away);
- a group's state is reported when it changed and no completion says it;
- a classic group's assignments are reported only once it is Stable (the leader's
  SyncGroup), a modern group's as its members' current assignments move; each before the
  completion they lead to, so a reader that closes a rebalance at `rebalance_completed` has
  seen every partition it moved.

Nothing here keeps state between changes: what a change needs to know of the past lives in
the groups (a modern group's `settled` epoch, a classic member's last `reported`
assignment). The JSON layout is the shared contract of the `__kgroup_events` topic (README,
"Group events"); tests/unit/core/test_group_event_fixtures.py holds it to recorded streams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kgroup.core import compact_json
from kgroup.core.result import Departure
from kgroup.group_types import DEAD, STABLE

FORMAT_VERSION = 1
# A classic group's state while a rebalance gathers its members.
PREPARING = "PreparingRebalance"

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
        return compact_json.dumps(self.as_dict(), sort_keys=True)


# ---- what a change did to a group -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GroupStatus:
    """A group as the events see it at one moment."""

    kind: Any                       # its GroupType (kgroup/group_types.py)
    state: str
    generation: int                 # classic generation or group epoch
    # The generation or epoch it was last Stable at (-1: never seen Stable).
    settled: int = -1


@dataclass(frozen=True, slots=True)
class MemberSnap:
    """A member as the events report it."""

    member_id: str
    instance_id: str | None
    member_epoch: int | None = None          # modern groups only
    partitions: TopicPartitionList | None = ()   # None: an assignment that is not partitions
    # What "the assignment changed" compares: the partitions, or the raw bytes of a classic
    # assignment that is not ConsumerProtocol.
    key: Any = ()


@dataclass(slots=True)
class GroupDelta:
    """What one change did to one group: the typed events before they are laid out."""

    group_id: str
    what: str                                # the request or timer, as reasons name it
    departure: Departure
    before: GroupStatus | None               # None: it did not exist
    after: GroupStatus | None                # None: it is gone
    departed: list[MemberSnap] = field(default_factory=list)
    # (member, the static member whose place it took, or None)
    joined: list[tuple[MemberSnap, MemberSnap | None]] = field(default_factory=list)
    away: list[MemberSnap] = field(default_factory=list)        # static members at epoch -2
    assigned: list[MemberSnap] = field(default_factory=list)    # new assignments


def compose(delta: GroupDelta, time_ms: int) -> list[GroupEvent]:
    """The events of `delta`, in the contract's order."""
    before, after = delta.before, delta.after
    if after is None:
        if before is None:
            return []
        after = GroupStatus(before.kind, DEAD, before.generation, before.settled)
    if before is None:
        before = GroupStatus(after.kind, "Empty", 0)
    kind, gid = after.kind, delta.group_id
    protocol = kind.name
    by_epoch = kind.by_epoch
    events: list[GroupEvent] = []

    def event(what: EventKind, m: MemberSnap | None = None, *, state: str = after.state,
              generation: int = after.generation, **extra: Any) -> None:
        events.append(GroupEvent(
            time_ms, gid, protocol, what, generation, state,
            member=m.member_id if m is not None else None,
            instance=m.instance_id if m is not None else None,
            member_epoch=m.member_epoch if m is not None and by_epoch else None, **extra))

    # 1. Membership: departures, arrivals (a static member's new id in its old one's
    #    place), and static members stepping out for a moment.
    gone_kind = _GONE[delta.departure]
    replaced_ids = {was.member_id for _, was in delta.joined if was is not None}
    for m in delta.departed:
        if m.member_id not in replaced_ids:
            event(gone_kind, m, reason=delta.what)
    for m, was in delta.joined:
        event(K.MEMBER_JOINED, m, replaced=was.member_id if was is not None else None,
              reason="static member restarted" if was is not None else None)
    for m in delta.away:
        event(K.MEMBER_LEFT, m, temporary=True, reason=delta.what)
    why = events[0].kind.value if events else delta.what

    # 2. Rebalance and state.
    alive = after.state != DEAD
    if by_epoch:
        started = alive and after.generation > before.generation
    else:
        started = alive and (
            (after.state == PREPARING and before.state != PREPARING)
            or (after.generation > before.generation and before.state != PREPARING))
    last_state = before.state
    if started:
        if by_epoch:
            event(K.REBALANCE_STARTED, reason=why)
            last_state = after.state
        else:
            event(K.REBALANCE_STARTED, state=PREPARING, generation=before.generation, reason=why)
            last_state = PREPARING
    completed = after.state == STABLE and after.generation > before.settled
    if after.state != last_state and not completed:
        event(K.GROUP_STATE, state=after.state)

    # 3. Assignments, before the completion they lead to.
    if by_epoch or after.state == STABLE:
        for m in delta.assigned:
            event(K.ASSIGNMENT_CHANGED, m, partitions=m.partitions)
    if completed:
        event(K.REBALANCE_COMPLETED)
    return events


def committed_event(group_id: str, status: GroupStatus, partitions: TopicPartitionList, what: str,
                    time_ms: int) -> GroupEvent:
    """Offsets a committed transaction made visible in a group (nothing else changed in it)."""
    return GroupEvent(time_ms, group_id, status.kind.name, K.TXN_OFFSETS_COMMITTED, status.generation,
                      status.state, partitions=partitions, reason=what)


def coordinator_event(group: Any, kind: EventKind, time_ms: int, node: int, previous_node: int | None = None,
                      load_ms: int | None = None) -> GroupEvent:
    """`coordinator_loaded` / `coordinator_unloaded` of one group (its coordinator moved)."""
    state, generation = group.status()
    return GroupEvent(time_ms, group.group_id, group.TYPE.name, kind, generation, state, node=node,
                      previous_node=previous_node, load_ms=load_ms)
