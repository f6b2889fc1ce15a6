"""Hypothesis: random responses, errors and delays never leave a member consuming a
partition after its revoked or lost callback ran (until it is assigned again)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    ClassicMemberMachine,
    Close,
    CommitAnswered,
    CoordinatorFound,
    CoordinatorLost,
    HeartbeatAnswered,
    JoinGroupAnswered,
    MemberConfig,
    MetadataUpdated,
    Poll,
    RequestFailed,
    RunAssigned,
    RunLost,
    RunRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendSyncGroup,
    Subscribe,
    SyncGroupAnswered,
    Tick,
    Unsubscribe,
)
from tests.unit.member.memberctx import assignment, members_meta

ERRORS = [E.NONE, E.NONE, E.NONE, E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID,
          E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.MEMBER_ID_REQUIRED, E.FENCED_INSTANCE_ID]

step = st.one_of(
    st.tuples(st.just("advance"), st.integers(0, 40_000)),
    st.tuples(st.just("poll"), st.just(0)),
    st.tuples(st.just("join"), st.sampled_from(ERRORS), st.booleans()),
    st.tuples(st.just("sync"), st.sampled_from(ERRORS), st.sets(st.integers(0, 5))),
    st.tuples(st.just("heartbeat"), st.sampled_from(ERRORS)),
    st.tuples(st.just("commit"), st.sampled_from(ERRORS)),
    st.tuples(st.just("found"), st.just(0)),
    st.tuples(st.just("lost"), st.just(0)),
    st.tuples(st.just("failed"), st.just(0)),
    st.tuples(st.just("subscribe"), st.sampled_from([("t",), ("t", "u"), ("u",)])),
    st.tuples(st.just("unsubscribe"), st.just(0)),
    st.tuples(st.just("metadata"), st.integers(1, 6)),
    st.tuples(st.just("close"), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(assignors=st.sampled_from([("range",), ("cooperative-sticky",), ("sticky", "range")]),
       static=st.booleans(), steps=st.lists(step, max_size=60))
def test_never_consumes_a_partition_after_revoked_or_lost(assignors, static, steps):
    m = ClassicMemberMachine(MemberConfig(group_id="g", assignors=assignors, session_timeout_ms=10_000,
                                   heartbeat_interval_ms=1_000, max_poll_interval_ms=30_000,
                                   group_instance_id="i" if static else None))
    now = 0
    consuming: set = set()
    last_req: dict = {}
    gen = 0

    def apply(event):
        for a in m.handle(event):
            if isinstance(a, (SendJoinGroup, SendSyncGroup, SendHeartbeat)):
                last_req[type(a)] = a
            elif isinstance(a, RunAssigned):
                assert not (a.partitions & consuming), "assigned twice without a revoke"
                consuming.update(a.partitions)
            elif isinstance(a, (RunRevoked, RunLost)):
                assert a.partitions <= consuming
                consuming.difference_update(a.partitions)
                # the member itself must have dropped them in the same step
                assert not (a.partitions & m.owned)
        # what the driver may consume is exactly what the callbacks said
        assert m.owned == consuming
        assert all(t in m.subscription for t, _ in m.owned)

    apply(MetadataUpdated((("t", 6), ("u", 6)), now))
    apply(Subscribe(("t",), now))
    for s in steps:
        kind = s[0]
        if kind == "advance":
            now += s[1]
            apply(Tick(now))
        elif kind == "poll":
            apply(Poll(now))
        elif kind == "join" and SendJoinGroup in last_req:
            gen += 1
            req = last_req[SendJoinGroup]
            leader = "m" if s[2] else "x"
            apply(JoinGroupAnswered(req.request_id, s[1], now, gen, assignors[0], leader, "m",
                                    tuple(members_meta(["m", "x"], ("t", "u")))))
        elif kind == "sync" and SendSyncGroup in last_req:
            req = last_req[SendSyncGroup]
            apply(SyncGroupAnswered(req.request_id, s[1], now, assignment({"t": sorted(s[2]), "u": [1]})))
        elif kind == "heartbeat" and SendHeartbeat in last_req:
            apply(HeartbeatAnswered(last_req[SendHeartbeat].request_id, s[1], now))
        elif kind == "commit":
            apply(CommitAnswered(s[1], now))
        elif kind == "found":
            apply(CoordinatorFound(now))
        elif kind == "lost":
            apply(CoordinatorLost(now))
        elif kind == "failed" and last_req:
            apply(RequestFailed(max(a.request_id for a in last_req.values()), now))
        elif kind == "subscribe":
            apply(Subscribe(s[1], now))
        elif kind == "unsubscribe":
            apply(Unsubscribe(now))
        elif kind == "metadata":
            apply(MetadataUpdated((("t", s[1]),), now))
        elif kind == "close":
            apply(Close(now))
    apply(Close(now))
    assert consuming == set()
