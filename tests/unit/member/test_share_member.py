"""The share-group member machine and its acknowledgement book, on a manual clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.error_codes import ErrorCode
from kgroup.member.actions import Fatal
from kgroup.member.classic_events import Close, Subscribe, Tick
from kgroup.member.share_member import (
    IllegalShareMemberTransition,
    SendShareGroupHeartbeat,
    ShareAcks,
    ShareGroupHeartbeatAnswered,
    ShareGroupHeartbeatFailed,
    ShareMemberMachine,
    ShareMemberState,
)

ASSIGNED = (("tid", (0, 1)),)


def joined(now: int = 0) -> ShareMemberMachine:
    m = ShareMemberMachine("m1")
    assert m.handle(Subscribe(("orders",), now)) == [SendShareGroupHeartbeat(0, ("orders",))]
    assert m.handle(ShareGroupHeartbeatAnswered(ErrorCode.NONE, now + 5, 3, 1_000, ASSIGNED)) == []
    return m


def test_kip932_member_joins_with_epoch_zero_and_heartbeats_at_the_interval():
    m = joined()
    assert m.state is ShareMemberState.STABLE and m.epoch == 3 and m.assignment == ASSIGNED
    assert m.next_deadline() == 1_005
    assert m.handle(Tick(1_000)) == []
    assert m.handle(Tick(1_005)) == [SendShareGroupHeartbeat(3, None)]
    assert m.next_deadline() is None                     # one heartbeat in flight at a time
    m.handle(ShareGroupHeartbeatAnswered(ErrorCode.NONE, 1_010, 4, 1_000, None))
    assert m.epoch == 4 and m.assignment == ASSIGNED     # no assignment in the answer: unchanged


def test_kip932_fenced_member_rejoins_at_epoch_zero_without_an_assignment():
    m = joined()
    m.handle(Tick(1_005))
    out = m.handle(ShareGroupHeartbeatAnswered(ErrorCode.FENCED_MEMBER_EPOCH, 1_010))
    assert out == [SendShareGroupHeartbeat(0, ("orders",))]
    assert m.state is ShareMemberState.JOINING and m.assignment == ()


def test_kip932_leave_sends_epoch_minus_one_then_the_member_is_unsubscribed():
    m = joined()
    assert m.handle(Close(10)) == [SendShareGroupHeartbeat(-1, None)]
    m.handle(ShareGroupHeartbeatAnswered(ErrorCode.NONE, 12, -1))
    assert m.state is ShareMemberState.UNSUBSCRIBED


def test_a_lost_heartbeat_is_retried_in_full_after_the_backoff():
    m = joined()
    m.handle(Tick(1_005))
    assert m.handle(ShareGroupHeartbeatFailed(1_006)) == []
    assert m.handle(Tick(1_106)) == [SendShareGroupHeartbeat(3, ("orders",))]


def test_a_fatal_error_stops_the_member():
    m = ShareMemberMachine("m1")
    m.handle(Subscribe(("orders",), 0))
    assert m.handle(ShareGroupHeartbeatAnswered(ErrorCode.GROUP_ID_NOT_FOUND, 1)) == [Fatal(ErrorCode.GROUP_ID_NOT_FOUND)]
    assert m.state is ShareMemberState.FATAL
    with pytest.raises(IllegalShareMemberTransition):
        m._to(ShareMemberState.JOINING)
    assert m.state is ShareMemberState.FATAL


def test_acks_come_out_as_runs_of_one_type():
    acks = ShareAcks()
    acks.delivered(("t", 0), [5, 6, 7, 8, 10])
    for o, k in ((5, 1), (6, 1), (7, 2), (8, 2), (10, 1)):
        acks.acknowledge(("t", 0), o, k)
    assert acks.take() == {("t", 0): [(5, 6, 1), (7, 8, 2), (10, 10, 1)]}
    assert acks.take() == {}
    with pytest.raises(ValueError):
        acks.acknowledge(("t", 0), 5, 1)


@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 3])), max_size=40))
def test_kip932_implicit_mode_accepts_everything_undecided_and_each_offset_leaves_once(decisions):
    acks = ShareAcks()
    acks.delivered(("t", 0), list(range(41)))
    chosen = dict(decisions)
    for o, k in chosen.items():
        acks.acknowledge(("t", 0), o, k)
    acks.accept_undecided(1)
    runs = acks.take()[("t", 0)]
    flat = {o: k for f, la, k in runs for o in range(f, la + 1)}
    assert flat == {o: chosen.get(o, 1) for o in range(41)}
    assert acks.undecided() == 0 and acks.take() == {}
