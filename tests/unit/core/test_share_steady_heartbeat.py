"""A settled member's share-group heartbeat is answered without the heartbeat's steps
(`ShareProtocol.steady`, KIP-932): the answer, the records (none) and every change to the
shard must be exactly what the steps give.

The property drives random interleavings of share-group heartbeats (joins, steady beats,
beats that repeat the subscription or the rack, stale and future epochs, resubscriptions,
leaves, unknown members), timer expiry (sessions, topic initialization) and topic changes
on two coordinators side by side (tests/unit/core/steady_twins.py): one as shipped, one
with the steady path switched off. After every operation both have written the same
records, given the same answers and errors, and hold the same groups, stored state and
timers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.config import GroupConfig
from kgroup.core.errors import ErrorCode
from kgroup.core.share_messages import ShareGroupHeartbeatRequest
from kgroup.core.share_protocol import ShareProtocol
from kgroup.core.timers import share_session_key
from tests.unit.core.groupctx import Pending
from tests.unit.core.steady_twins import Recording, Twins

G = "sg"
MEMBERS = 4
CONFIG = GroupConfig(share_session_timeout_ms=10_000, share_heartbeat_interval_ms=1_000)

who = st.integers(0, MEMBERS - 1)
topic_sets = st.sampled_from([("orders",), ("orders",), ("orders", "refunds"), ("refunds",)])
operations = st.one_of(
    st.tuples(st.just("join"), who, topic_sets),
    st.tuples(st.just("beat"), who, st.sampled_from(["good", "good", "good", "same topics", "rack", "client",
                                                     "stale", "ahead", "resubscribe"])),
    st.tuples(st.just("all")),
    st.tuples(st.just("leave"), who),
    st.tuples(st.just("unknown"), who),
    st.tuples(st.just("advance"), st.sampled_from([0, 1_000, 4_000, 11_000])),
    st.tuples(st.just("topics"), st.integers(1, 4), st.integers(0, 3)),
)
bootstrap = st.lists(st.tuples(st.just("join"), who, topic_sets), min_size=1, max_size=4).map(
    lambda joins: joins + [("advance", 0), ("all",), ("all",)])
scenarios = st.tuples(bootstrap, st.lists(operations, min_size=3, max_size=40)).map(lambda p: p[0] + p[1])


def member_id(i: int) -> str:
    return f"share-member-{i}"


@dataclass
class ShareRun:
    ctx: Recording = field(default_factory=lambda: Recording(CONFIG))

    def __post_init__(self) -> None:
        self.ctx.set_topics(orders=2)

    def heartbeat(self, i: int, epoch: int, topics=None, rack=None, client_id: str = "client") -> Pending:
        ctx = self.ctx
        return ctx.call(ctx.coord.share_group_heartbeat, ShareGroupHeartbeatRequest(
            G, member_id(i), epoch, rack_id=rack, subscribed_topic_names=topics, client_id=client_id,
            client_host="/127.0.0.1"))

    def member(self, i: int):
        group = self.ctx.coord.share_groups.get(G)
        return group.members.get(member_id(i)) if group is not None else None

    def beat(self, i: int, how: str) -> None:
        m = self.member(i)
        if m is None:
            return
        epoch, topics, rack, client = m.epoch, None, None, "client"
        if how == "same topics":
            topics = m.meta.subscribed_topic_names
        elif how == "rack":
            rack = "rack-a"
        elif how == "client":
            client = "another-client"
        elif how == "stale":
            epoch -= 1
        elif how == "ahead":
            epoch += 1
        elif how == "resubscribe":
            topics = ("refunds",) if m.meta.subscribed_topic_names == ("orders",) else ("orders",)
        self.heartbeat(i, epoch, topics, rack, client)


def step(run: ShareRun, op: tuple) -> None:
    kind, ctx = op[0], run.ctx
    if kind == "join":
        run.heartbeat(op[1], 0, op[2])
    elif kind == "beat":
        run.beat(op[1], op[2])
    elif kind == "all":
        for i in range(MEMBERS):
            run.beat(i, "good")
    elif kind == "leave":
        if run.member(op[1]) is not None:
            run.heartbeat(op[1], -1)
    elif kind == "unknown":
        run.heartbeat(op[1] + MEMBERS, 1)
    elif kind == "advance":
        ctx.advance(op[1])
    elif kind == "topics":
        _, orders, refunds = op
        ctx.set_topics(**({"orders": orders, "refunds": refunds} if refunds else {"orders": orders}))
    else:  # pragma: no cover
        raise AssertionError(op)


def twins() -> Twins:
    return Twins(ShareProtocol, "share_groups", ShareRun(), ShareRun(), step)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios)
def test_the_share_steady_path_answers_exactly_as_the_heartbeat_steps_over_random_interleavings(ops):
    twins().play(ops)


def test_the_share_twins_reach_the_steady_path_and_agree():
    pair = twins().play([("join", 0, ("orders",)), ("join", 1, ("orders",)), ("advance", 0), ("all",), ("all",),
                         ("all",), ("beat", 0, "same topics"), ("beat", 1, "rack"), ("advance", 4_000), ("all",)])
    assert pair.answered["answered"] >= 4 and pair.answered["stepped"] >= 4, pair.answered


def test_a_settled_share_members_heartbeat_skips_the_steps_writes_nothing_and_moves_its_session_on():
    run = ShareRun()
    for op in [("join", 0, ("orders",)), ("join", 1, ("orders",)), ("advance", 0), ("all",), ("all",)]:
        step(run, op)
    ctx, m = run.ctx, run.member(0)
    assert m.current.assigned and m.epoch == ctx.coord.share_groups[G].target_epoch
    logged, calls = len(ctx.log), []
    original = ShareProtocol.heartbeat_in

    def counting(self, *args, **kwargs):
        calls.append(args)
        return original(self, *args, **kwargs)

    ctx.now += 3_000
    with patch.object(ShareProtocol, "heartbeat_in", counting):
        pending = run.heartbeat(0, m.epoch)
        assert not calls
        assert pending.error is ErrorCode.NONE and pending.response.assignment is None
        assert pending.response.member_epoch == m.epoch
        assert pending.response.heartbeat_interval_ms == CONFIG.share_heartbeat_interval_ms
        assert len(ctx.log) == logged
        deadline = ctx.coord.shard.timers._current[share_session_key(G, member_id(0))][0]
        assert deadline == ctx.now + CONFIG.share_session_timeout_ms
        # Repeating the subscription takes the steps (they find nothing changed).
        run.heartbeat(0, m.epoch, topics=("orders",))
        assert len(calls) == 1 and len(ctx.log) == logged
