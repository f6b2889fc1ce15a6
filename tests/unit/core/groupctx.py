"""A test context that drives one coordinator shard on a manual clock.

It plays the broker's part through the core's `CoordinatorHost` (the lab's path too): each
handler's records are appended to an in-memory log and replayed, replies are delivered to
`Pending` handles, and `advance(ms)` fires timers at their exact deadlines. Tests read as
scenarios: join, sync, heartbeat, leave, commit, advance.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from kgroup.core.classic_group import ClassicGroup
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.host import CoordinatorHost
from kgroup.core.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeavingMember,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kgroup.core.records import Record

DEFAULT_PROTOCOLS = (("range", b"meta"),)


@dataclass(eq=False)
class Pending:
    """A request's reply slot: `response` is set when the coordinator answers."""

    request: Any
    response: Any = None
    raised: ErrorCode | None = None
    message: str = ""                  # the raised error's message
    replies: int = 0

    @property
    def done(self) -> bool:
        return self.response is not None or self.raised is not None

    @property
    def error(self) -> ErrorCode:
        assert self.done, f"no reply yet to {self.request}"
        return self.raised if self.raised is not None else self.response.error

    def __hash__(self) -> int:
        return id(self)


@dataclass
class GroupContext(CoordinatorHost):
    config: GroupConfig = field(default_factory=GroupConfig)
    now: int = 0
    log: list[Record] = field(default_factory=list)
    # Scenarios assign at once, as the test brokers do (KIP-1263's assignment intervals at
    # 0); the KIP-1263 scenarios pass False to run with the config's intervals.
    assign_at_once: bool = True

    def __post_init__(self) -> None:
        self.at_once()
        super().__init__(GroupCoordinatorShard(self.config), self.log)
        self.apply(self.coord.load_complete(self.now))

    def at_once(self) -> None:
        """The config with KIP-1263's intervals at 0, unless the scenario wants them."""
        if self.assign_at_once:
            self.config = dataclasses.replace(self.config, consumer_assignment_interval_ms=0,
                                              share_assignment_interval_ms=0)

    @property
    def coord(self) -> GroupCoordinatorShard:
        return self.coordinator

    # ---- plumbing (apply, handle and expire are the host's) ------------------------------

    def deliver(self, replies) -> None:
        for to, response in replies:
            assert isinstance(to, Pending)
            to.replies += 1
            to.response = response

    def call(self, method, request, *args) -> Pending:
        pending = Pending(request)
        try:
            self.handle(method, request, pending, self.now, *args)
        except GroupError as exc:
            pending.raised, pending.message = exc.code, exc.message
        return pending

    def advance(self, ms: int) -> None:
        """Move the clock forward, firing each timer at its own deadline."""
        target = self.now + ms
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.expire(self.now)
        self.now = target

    def advance_alive(self, ms: int, members, generation: int, group: str = "g",
                      step: int = 3_000) -> None:
        """Advance while `members` heartbeat every `step` ms, as live clients would."""
        target = self.now + ms
        while self.now < target:
            live = self.coord.groups.get(group)
            for member_id in members:
                member = live.members.get(member_id) if live else None
                if member is not None:
                    self.heartbeat(group, member_id, generation, instance=member.group_instance_id)
            self.advance(min(step, target - self.now))

    # ---- consumer protocol ----------------------------------------------------------------

    def set_topics(self, **partitions: int) -> None:
        """Topics as the broker would report them; topic ids are `id-<name>`."""
        self.apply(self.coord.update_topics({n: (f"id-{n}", c) for n, c in partitions.items()}, self.now))

    def cg_heartbeat(self, member: str, epoch: int, *, group: str = "cg", topics=None, regex=None,
                     owned=None, instance: str | None = None, assignor: str | None = None,
                     rebalance: int = -1, version: int = 1) -> Pending:
        if epoch == 0:
            rebalance = 60_000 if rebalance == -1 else rebalance
            owned = () if owned is None else owned
        return self.call(self.coord.consumer_group_heartbeat, ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=rebalance,
            subscribed_topic_names=None if topics is None else tuple(topics),
            subscribed_topic_regex=regex, server_assignor=assignor,
            owned=None if owned is None else tuple((t, tuple(ps)) for t, ps in owned),
            client_id="client", client_host="/127.0.0.1", api_version=version,
        ))

    def cgroup(self, group_id: str = "cg"):
        return self.coord.consumer_groups[group_id]

    def group(self, group_id: str = "g") -> ClassicGroup:
        return self.coord.groups[group_id]

    # ---- requests -------------------------------------------------------------------------

    def join(self, group: str = "g", member: str = "", *, instance: str | None = None,
             protocols=DEFAULT_PROTOCOLS, protocol_type: str = "consumer", session: int = 10_000,
             rebalance: int = 30_000, version: int = 9, client_id: str = "client") -> Pending:
        return self.call(self.coord.join_group, JoinGroupRequest(
            group_id=group, member_id=member, protocol_type=protocol_type,
            protocols=tuple(protocols), session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            group_instance_id=instance, client_id=client_id, client_host="/127.0.0.1",
            api_version=version,
        ))

    def join_new(self, group: str = "g", **kwargs) -> Pending:
        """A dynamic member's two-step join: get an id, then join with it."""
        first = self.join(group, **kwargs)
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED, first
        return self.join(group, first.response.member_id, **kwargs)

    def sync(self, group: str, member: str, generation: int, assignments: dict | None = None, *,
             instance: str | None = None, protocol_type: str | None = None,
             protocol_name: str | None = None) -> Pending:
        return self.call(self.coord.sync_group, SyncGroupRequest(
            group_id=group, generation_id=generation, member_id=member, group_instance_id=instance,
            protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=tuple((assignments or {}).items()),
        ))

    def heartbeat(self, group: str, member: str, generation: int, *, instance: str | None = None) -> Pending:
        return self.call(self.coord.heartbeat, HeartbeatRequest(group, generation, member, instance))

    def leave(self, group: str, *members: LeavingMember | str) -> Pending:
        leaving = tuple(m if isinstance(m, LeavingMember) else LeavingMember(m) for m in members)
        return self.call(self.coord.leave_group, LeaveGroupRequest(group, leaving))

    def commit(self, group: str, member: str, generation: int, offsets: dict, *,
               instance: str | None = None, metadata: str = "", version: int = 8,
               retention_ms: int = -1) -> Pending:
        return self.call(self.coord.commit_offsets, OffsetCommitRequest(
            group_id=group, generation_id=generation, member_id=member, group_instance_id=instance,
            partitions=tuple(OffsetCommitPartition(t, p, o, metadata=metadata)
                             for (t, p), o in offsets.items()),
            retention_time_ms=retention_ms, api_version=version,
        ))

    def fetch(self, group: str, partitions=None) -> Pending:
        req = OffsetFetchRequest(group, None if partitions is None else tuple(partitions))
        return self.call(self.coord.fetch_offsets, req)

    def committed(self, group: str = "g") -> dict:
        """Offsets as OffsetFetch for all partitions returns them."""
        return {(f.topic, f.partition): f.offset for f in self.fetch(group).response.partitions}

    def delete_offsets(self, group: str, partitions) -> Pending:
        return self.call(self.coord.delete_offsets, OffsetDeleteRequest(group, tuple(partitions)))

    def describe(self, *group_ids: str, missing_as_error: bool = False):
        pending = Pending(group_ids)
        self.apply(self.coord.describe_groups(group_ids, pending, self.now, missing_as_error))
        return pending.response

    def list_groups(self, states=(), types=()):
        pending = Pending(None)
        self.apply(self.coord.list_groups(ListGroupsRequest(tuple(states), tuple(types)), pending, self.now))
        return pending.response

    def delete_groups(self, *group_ids: str):
        pending = Pending(group_ids)
        self.apply(self.coord.delete_groups(group_ids, pending, self.now))
        return pending.response

    # ---- whole scenarios ------------------------------------------------------------------

    def stable_group(self, n: int, group: str = "g", *, static: bool = False, **kwargs) -> list[str]:
        """Bring up a Stable group of n members in one generation; return member ids in join order."""
        joins = []
        for i in range(n):
            if static:
                joins.append(self.join(group, instance=f"instance-{i}", **kwargs))
            else:
                joins.append(self.join_new(group, **kwargs))
        self.run_until(lambda: all(j.done for j in joins))
        return self.complete_rebalance(joins, group)

    def run_until(self, condition, step: int = 100, limit: int = 3_600_000) -> None:
        """Advance in small steps until `condition()` holds (fails after `limit` ms)."""
        start = self.now
        while not condition():
            assert self.now - start < limit, "condition never held"
            self.advance(step)

    def complete_rebalance(self, joins: list[Pending], group: str = "g") -> list[str]:
        """Given answered JoinGroups of one generation, sync everyone (leader first)."""
        assert all(j.done and j.error is ErrorCode.NONE for j in joins), [j.response for j in joins]
        members = [j.response.member_id for j in joins]
        generation = joins[0].response.generation_id
        leader = joins[0].response.leader
        assignments = {m: f"assignment-of-{m}".encode() for m in members}
        syncs = [self.sync(group, leader, generation, assignments)]
        syncs += [self.sync(group, m, generation) for m in members if m != leader]
        assert all(s.error is ErrorCode.NONE for s in syncs), [s.response for s in syncs]
        return members


def shard_view(coord) -> dict:
    """Everything a request could change in a shard, stored and runtime, as comparable data.

    Classic groups are runtime objects: each slot is copied (reply tokens compare by
    identity), so two views are equal exactly when no group, member, parked reply, timer or
    stored value moved in between. The member-id source is left out (drawing an id is not a
    change of state).
    """
    shard = coord.shard
    classic = {}
    for group_id, group in shard.groups.items():
        slots = {}
        for name in type(group).__slots__:
            value = getattr(group, name)
            slots[name] = dict(value) if isinstance(value, dict) else value
        classic[group_id] = (id(group), slots)
    timers = shard.timers
    return {
        "classic": classic,
        "consumer": copy.deepcopy(shard.consumer_groups),
        "stored": copy.deepcopy(shard.stored),
        "topics": dict(shard.topics),
        "timers": (dict(timers._current), timers._seq),
    }
