"""A test context for the pure classic member: a manual clock and a scripted coordinator.

Scenarios read as ``ctx.subscribe(...)``, ``ctx.join_ok(...)``, ``ctx.sync_ok(...)``,
``ctx.advance(ms)``; every call returns the actions the member emitted.
"""

from __future__ import annotations

from kgroup.assignors import Assignment, encode_assignment
from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    ClassicMemberMachine,
    CoordinatorFound,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MemberConfig,
    MetadataUpdated,
    Poll,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
    Subscribe,
    SyncGroupAnswered,
    Tick,
)


def assignment(parts: dict[str, list[int]]) -> bytes:
    return encode_assignment(Assignment(tuple((t, tuple(sorted(p))) for t, p in sorted(parts.items()))), 1)


class MemberCtx:
    def __init__(self, **config) -> None:
        config.setdefault("group_id", "g")
        config.setdefault("session_timeout_ms", 10_000)
        config.setdefault("heartbeat_interval_ms", 1_000)
        config.setdefault("max_poll_interval_ms", 30_000)
        config.setdefault("assignors", ("range",))
        self.now = 0
        self.member = ClassicMemberMachine(MemberConfig(**config), now_ms=0)
        self.log: list = []

    @property
    def state(self):
        return self.member.state.name

    def send(self, event):
        actions = self.member.handle(event)
        self.log.extend(actions)
        return actions

    def advance(self, ms: int):
        self.now += ms
        return self.send(Tick(self.now))

    def poll(self):
        return self.send(Poll(self.now))

    def subscribe(self, *topics: str, coordinator: bool = True, counts: dict | None = None):
        out = self.send(MetadataUpdated(tuple((counts or {t: 4 for t in topics}).items()), self.now))
        out += self.send(Subscribe(topics, self.now))
        if coordinator:
            out += self.send(CoordinatorFound(self.now))
        return out

    def last(self, kind):
        return [a for a in self.log if isinstance(a, kind)][-1]

    def join_ok(self, member_id="m1", generation=1, leader="other", members=(), protocol="range"):
        req = self.last(SendJoinGroup)
        return self.send(JoinGroupAnswered(req.request_id, E.NONE, self.now, generation, protocol,
                                           leader, member_id, tuple(members)))

    def join_error(self, error, member_id=""):
        req = self.last(SendJoinGroup)
        return self.send(JoinGroupAnswered(req.request_id, error, self.now, member_id=member_id))

    def sync_ok(self, parts: dict[str, list[int]]):
        req = self.last(SendSyncGroup)
        return self.send(SyncGroupAnswered(req.request_id, E.NONE, self.now, assignment(parts)))

    def sync_error(self, error):
        req = self.last(SendSyncGroup)
        return self.send(SyncGroupAnswered(req.request_id, error, self.now))

    def heartbeat_answer(self, error=E.NONE):
        req = self.last(SendHeartbeat)
        return self.send(HeartbeatAnswered(req.request_id, error, self.now))

    def stable(self, parts: dict[str, list[int]], topics=("t",), **join):
        self.subscribe(*topics)
        self.join_ok(**join)
        return self.sync_ok(parts)


def members_meta(member_ids, topics=("t",)):
    from kgroup.assignors import Subscription, encode_subscription

    return [JoinedMember(m, None, encode_subscription(Subscription(tuple(topics)), 1)) for m in member_ids]
