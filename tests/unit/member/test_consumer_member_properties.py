"""Hypothesis: random heartbeat answers, errors, delays and user calls never leave a
consumer-protocol member consuming a partition after its revoked or lost callback ran
(until it is assigned again), and every state it passes through is allowed by the table."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    Close,
    CommitOffsets,
    CommitAnswered,
    ConsumerGroupHeartbeatAnswered,
    ConsumerMemberMachine,
    ConsumerState,
    CoordinatorFound,
    CoordinatorLost,
    MemberConfig,
    Poll,
    RequestFailed,
    RunAssigned,
    RunLost,
    RunRevoked,
    SendConsumerGroupHeartbeat,
    Subscribe,
    Tick,
    TopicNames,
    Unsubscribe,
)
from kgroup.member.consumer_member import _TRANSITIONS

ERRORS = [E.NONE] * 5 + [E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.NOT_COORDINATOR,
                         E.COORDINATOR_LOAD_IN_PROGRESS, E.UNSUPPORTED_ASSIGNOR]
TOPICS = ("id-t", "id-u", "id-v")

assignment = st.one_of(st.none(), st.sets(st.tuples(st.sampled_from(TOPICS), st.integers(0, 4)),
                                          max_size=8))
answer = st.tuples(st.just("answer"), st.sampled_from(ERRORS), assignment, st.integers(0, 3))
step = st.one_of(
    answer, answer, answer, answer, answer, answer,
    st.tuples(st.just("advance"), st.integers(0, 3_000)),
    st.tuples(st.just("advance"), st.integers(0, 3_000)),
    st.tuples(st.just("advance"), st.sampled_from([10_000, 35_000])),
    st.tuples(st.just("poll"), st.just(0)),
    st.tuples(st.just("poll"), st.just(0)),
    st.tuples(st.just("leave_answer"), st.just(0)),
    st.tuples(st.just("names"), st.sets(st.sampled_from(TOPICS))),
    st.tuples(st.just("commit"), st.sampled_from([E.NONE, E.STALE_MEMBER_EPOCH,
                                                  E.FENCED_MEMBER_EPOCH])),
    st.tuples(st.just("found"), st.just(0)),
    st.tuples(st.just("lost"), st.just(0)),
    st.tuples(st.just("failed"), st.just(0)),
    st.tuples(st.just("subscribe"), st.sampled_from([("t",), ("t", "u"), ("u", "v")])),
    st.tuples(st.just("unsubscribe"), st.just(0)),
)  # Close comes once, at the end: after it every event is ignored


@settings(max_examples=400, deadline=None)
@given(static=st.booleans(), auto_commit=st.booleans(), steps=st.lists(step, min_size=15, max_size=80))
def test_never_consumes_a_partition_after_revoked_or_lost(static, auto_commit, steps):
    m = ConsumerMemberMachine(MemberConfig(group_id="g", heartbeat_interval_ms=1_000,
                                    max_poll_interval_ms=30_000, auto_commit=auto_commit,
                                    group_instance_id="i" if static else None), "m")
    now = 0
    consuming: set = set()
    sent: list[SendConsumerGroupHeartbeat] = []
    epoch = 0

    def apply(event):
        before = m.state
        actions = m.handle(event)
        states = [before, *m.path]
        assert m.path == [] or m.path[-1] is m.state
        for a, b in zip(states, states[1:]):
            assert b in _TRANSITIONS[a]
        for i, a in enumerate(actions):
            if isinstance(a, SendConsumerGroupHeartbeat):
                sent.append(a)
                if a.member_epoch == 0:
                    assert a.owned == () and a.full  # a join owns nothing
            elif isinstance(a, RunAssigned):
                assert not (a.partitions & consuming), "assigned twice without a revoke"
                consuming.update(a.partitions)
            elif isinstance(a, (RunRevoked, RunLost)):
                assert a.partitions <= consuming
                consuming.difference_update(a.partitions)
                assert not (a.partitions & m.owned)
            elif isinstance(a, CommitOffsets):
                # commit comes right before the revoke of the same partitions
                assert isinstance(actions[i + 1], RunRevoked)
                assert actions[i + 1].partitions == a.partitions
        # what the driver may consume is exactly what the callbacks said
        assert m.owned == consuming
        if m.state in (ConsumerState.UNSUBSCRIBED, ConsumerState.FATAL, ConsumerState.STALE,
                       ConsumerState.LEAVING, ConsumerState.JOINING):
            assert not consuming

    apply(TopicNames((("id-t", "t"), ("id-u", "u")), now))  # id-v stays unnamed until asked
    apply(Subscribe(("t",), now))
    apply(CoordinatorFound(now))
    for s in steps:
        kind = s[0]
        if kind == "advance":
            now += s[1]
            apply(Tick(now))
        elif kind == "poll":
            apply(Poll(now))
        elif kind == "answer":
            if m.next_deadline() is not None and not [a for a in sent[-1:] if a.member_epoch >= 0]:
                now = max(now, m.next_deadline())  # let the next heartbeat go out
                apply(Tick(now))
            ours = [a for a in sent if a.member_epoch >= 0]
            if not ours:
                continue
            req = ours[-1]  # usually the one in flight; sometimes an old one
            err, parts = s[1], s[2]
            epoch += s[3]
            asg = None
            if parts is not None:
                by: dict = {}
                for t, p in parts:
                    by.setdefault(t, []).append(p)
                asg = tuple((t, tuple(sorted(ps))) for t, ps in sorted(by.items()))
            apply(ConsumerGroupHeartbeatAnswered(req.request_id, err, now, "m", max(epoch, 1),
                                                 1_000, asg))
        elif kind == "leave_answer":
            leaves = [a for a in sent if a.member_epoch < 0]
            if leaves:
                apply(ConsumerGroupHeartbeatAnswered(leaves[-1].request_id, E.NONE, now))
        elif kind == "names":
            apply(TopicNames(tuple((t, t[3:]) for t in sorted(s[1])), now))
        elif kind == "commit":
            apply(CommitAnswered(s[1], now))
        elif kind == "found":
            apply(CoordinatorFound(now))
        elif kind == "lost":
            apply(CoordinatorLost(now))
        elif kind == "failed" and sent:
            apply(RequestFailed(sent[-1].request_id, now))
        elif kind == "subscribe":
            apply(Subscribe(s[1], now))
        elif kind == "unsubscribe":
            apply(Unsubscribe(now))
    apply(Close(now))
    assert consuming == set()
    assert m.state in (ConsumerState.UNSUBSCRIBED, ConsumerState.LEAVING, ConsumerState.FATAL)
