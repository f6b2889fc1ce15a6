"""Group timelines: what the group events say about each group, folded as they arrive.

How this works: `GroupHistory.apply(event)` takes one event in the layout of the
`__kgroup_events` contract (README, "Group events": a dict with `kind`, `group`, `member`,
`generation`, `partitions`, ...) and updates that group's `GroupTimeline`: its state and
generation (or epoch), its members with their last reported assignment, who owns each
partition, and its rebalances. A rebalance opens at `rebalance_started` (a second start
before it completes is the same rebalance: a consumer group's epoch may move again while it
reconciles) and closes at `rebalance_completed`, which `apply` returns as a `Rebalance`:
when, why (the start's reason), how long, how many members, and the partitions it moved.

"Moved" is what the rebalance analytics example counts: an `assignment_changed` that gives a
partition to a member other than the one that last held it (the last holder survives its
departure, so a partition handed from a dead member to a live one counts; one handed out
for the first time does not). Moves between two rebalances count for the last one.

The same fold runs in the broker (fed the events as the event stream derives them, for the
log, the web console and the metrics) and in `kgroup groups watch` (fed the records of the
topic): no I/O, no clock. Client id and host are not in the events; the broker passes them
in (`client`) when a member joins, and they stay with the member.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from kgroup.group_types import CLASSIC

JOINED = "member_joined"
DEPARTED = frozenset({"member_left", "member_expired", "member_fenced"})
STARTED = "rebalance_started"
COMPLETED = "rebalance_completed"
ASSIGNMENT = "assignment_changed"
DEAD = "Dead"
EMPTY = "Empty"

TopicPartition = tuple[str, int]
# (topic, partition, previous owner, new owner)
Move = tuple[str, int, str, str]


@dataclass(slots=True)
class MemberInfo:
    """A member as the events (and the broker, for client id and host) told of it."""

    member_id: str
    instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    member_epoch: int | None = None
    # Last reported assignment; None when the coordinator cannot decode it.
    partitions: tuple[TopicPartition, ...] | None = ()
    joined_ms: int | None = None
    # A static member away with epoch -2: still a member, not consuming.
    away: bool = False


@dataclass(frozen=True, slots=True)
class Rebalance:
    group: str
    protocol: str
    started_ms: int
    cause: str | None
    generation: int = -1                     # reached at completion (generation or epoch)
    completed_ms: int | None = None          # None while in progress
    members: int = 0
    moved: tuple[Move, ...] = ()

    @property
    def duration_ms(self) -> int | None:
        return None if self.completed_ms is None else self.completed_ms - self.started_ms

    def as_dict(self) -> dict[str, Any]:
        return {"started_ms": self.started_ms, "completed_ms": self.completed_ms,
                "duration_ms": self.duration_ms, "generation": self.generation, "cause": self.cause,
                "members": self.members, "moved": [list(m) for m in self.moved]}


@dataclass(slots=True)
class GroupTimeline:
    group: str
    protocol: str = CLASSIC.name
    state: str = EMPTY
    generation: int = 0
    members: dict[str, MemberInfo] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    last_owner: dict[TopicPartition, str] = field(default_factory=dict)
    open: Rebalance | None = None
    _moves: list[Move] = field(default_factory=list)
    rebalances: deque[Rebalance] = field(default_factory=deque)
    rebalance_count: int = 0
    moved_count: int = 0
    last_event_ms: int = 0

    @property
    def last_rebalance(self) -> Rebalance | None:
        return self.rebalances[-1] if self.rebalances else None


def humane(reason: str | None) -> str | None:
    """An event kind used as a reason ("member_joined") as words ("member joined")."""
    return reason.replace("_", " ") if reason else reason


class GroupHistory:
    """Every group's timeline, from its events; keeps the last `keep` rebalances of each."""

    def __init__(self, keep: int = 50) -> None:
        self.keep = keep
        self.groups: dict[str, GroupTimeline] = {}

    def timeline(self, group: str) -> GroupTimeline:
        timeline = self.groups.get(group)
        if timeline is None:
            timeline = self.groups[group] = GroupTimeline(group, rebalances=deque(maxlen=self.keep))
        return timeline

    def seed(self, group: str, protocol: str, state: str, generation: int, members: list[MemberInfo]) -> None:
        """Start a group's timeline from what the coordinator holds (a group loaded from the
        log, which has no events until it next changes)."""
        t = self.timeline(group)
        t.protocol, t.state, t.generation = protocol, state, generation
        t.members = {m.member_id: m for m in members}
        for m in members:
            for tp in m.partitions or ():
                t.owners[tp] = t.last_owner[tp] = m.member_id

    def apply(self, event: Mapping[str, Any], client: tuple[str, str] | None = None) -> Rebalance | None:
        """Fold one event in; returns the rebalance it completed, if it did.

        `client`: (client id, host) of the member a `member_joined` names, when known.
        """
        group = event.get("group")
        if group is None:
            return None
        t = self.timeline(str(group))
        kind = event.get("kind")
        time_ms = int(event.get("time_ms") or 0)
        t.last_event_ms = max(t.last_event_ms, time_ms)
        t.protocol = str(event.get("protocol") or t.protocol)
        if event.get("state") is not None:
            t.state = str(event["state"])
        if event.get("generation") is not None:
            t.generation = int(event["generation"])
        member = event.get("member")
        if kind == JOINED and member:
            was = t.members.pop(event["replaced"], None) if event.get("replaced") else None
            info = MemberInfo(member, event.get("instance"), member_epoch=event.get("member_epoch"),
                              joined_ms=time_ms)
            if was is not None:            # a static member's new id: same process identity
                info.partitions, info.client_id, info.client_host = was.partitions, was.client_id, was.client_host
                for tp in was.partitions or ():
                    if t.owners.get(tp) == was.member_id:
                        t.owners[tp] = member
            if client is not None:
                info.client_id, info.client_host = client
            t.members[member] = info
        elif kind in DEPARTED and member:
            if event.get("temporary"):
                info = t.members.get(member)
                if info is not None:
                    info.away = True
            else:
                gone = t.members.pop(member, None)
                # A member of a group whose assignments are opaque bytes has partitions None.
                _release(t, member, (gone.partitions or ()) if gone is not None else ())
        elif kind == STARTED:
            if t.open is None:
                t.open = Rebalance(t.group, t.protocol, time_ms, event.get("reason"))
                t._moves = []
        elif kind == ASSIGNMENT and member:
            self._assigned(t, member, event)
        elif kind == COMPLETED:
            return self._completed(t, time_ms)
        if t.state == DEAD:
            del self.groups[t.group]
        elif t.state == EMPTY and t.open is not None:
            # The last member left mid-rebalance: nothing to complete (a classic group's
            # generation still moves, as in Kafka, but nobody is assigned anything).
            t.open = None
            t._moves = []
        return None

    def _assigned(self, t: GroupTimeline, member: str, event: Mapping[str, Any]) -> None:
        info = t.members.get(member)
        if info is None:                   # an event of a member we never saw join (loaded)
            info = t.members[member] = MemberInfo(member, event.get("instance"))
        info.member_epoch = event.get("member_epoch", info.member_epoch)
        info.away = False
        raw = event.get("partitions")
        before = info.partitions or ()
        if raw is None:
            info.partitions = None
            _release(t, member, before)
            return
        now = tuple(sorted((str(tp[0]), int(tp[1])) for tp in raw))
        info.partitions = now
        mine = set(now)
        # Only this member's own partitions are looked at (never a pass over the group's).
        _release(t, member, [tp for tp in before if tp not in mine])
        for tp in now:
            previous = t.last_owner.get(tp)
            t.last_owner[tp] = member
            t.owners[tp] = member
            if previous is not None and previous != member:
                move = (tp[0], tp[1], previous, member)
                t.moved_count += 1
                if t.open is not None:
                    t._moves.append(move)
                elif t.rebalances:         # settling after its rebalance completed
                    last = t.rebalances[-1]
                    t.rebalances[-1] = replace(last, moved=last.moved + (move,))

    def _completed(self, t: GroupTimeline, time_ms: int) -> Rebalance:
        opened = t.open or Rebalance(t.group, t.protocol, time_ms, None)
        done = replace(opened, generation=t.generation, completed_ms=time_ms, members=len(t.members),
                     moved=tuple(t._moves))
        t.open = None
        t._moves = []
        t.rebalances.append(done)
        t.rebalance_count += 1
        return done


def _release(t: GroupTimeline, member: str, partitions) -> None:
    """`member` no longer holds `partitions` (those someone else took meanwhile stay theirs).

    None: the member's assignment was never readable as partitions (a group of another
    protocol type), so it holds none."""
    owners = t.owners
    for tp in partitions or ():
        if owners.get(tp) == member:
            del owners[tp]
