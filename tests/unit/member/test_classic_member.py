"""Every classic-member transition as a scenario on a manual clock."""

from __future__ import annotations

import pytest

from kgroup.assignors import decode_assignment, decode_subscription
from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    ClassicMemberMachine,
    ClassicState,
    Close,
    CommitOffsets,
    CommitAnswered,
    CoordinatorFound,
    Fatal,
    FindCoordinator,
    IllegalMemberTransition,
    MemberConfig,
    MetadataUpdated,
    RequestFailed,
    RunAssigned,
    RunLost,
    RunRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    Subscribe,
    Unsubscribe,
)
from tests.unit.member.memberctx import MemberCtx, members_meta


def kinds(actions):
    return [type(a).__name__ for a in actions]


def tps(topic, *ps):
    return frozenset((topic, p) for p in ps)


# -- joining ------------------------------------------------------------------------------


def test_subscribe_without_coordinator_asks_for_it_then_joins_when_found():
    ctx = MemberCtx()
    out = ctx.subscribe("t", coordinator=False)
    assert kinds(out) == ["FindCoordinator"] and ctx.state == "JOINING"
    out = ctx.send(CoordinatorFound(ctx.now))
    assert kinds(out) == ["SendJoinGroup"]
    join = out[0]
    assert join.member_id == "" and join.rebalance_timeout_ms == 30_000
    assert decode_subscription(join.protocols[0][1]).topics == ("t",)


def test_member_id_required_resends_join_with_the_given_id():
    ctx = MemberCtx()
    ctx.subscribe("t")
    out = ctx.join_error(E.MEMBER_ID_REQUIRED, member_id="m-42")
    assert kinds(out) == ["SendJoinGroup"] and out[0].member_id == "m-42"
    assert ctx.state == "JOINING"


def test_join_then_sync_then_stable_runs_assigned():
    ctx = MemberCtx()
    ctx.subscribe("t")
    out = ctx.join_ok()
    assert kinds(out) == ["SendSyncGroup"] and out[0].assignments == () and ctx.state == "SYNCING"
    out = ctx.sync_ok({"t": [0, 1]})
    assert out == [RunAssigned(tps("t", 0, 1))] and ctx.state == "STABLE"
    assert ctx.member.owned == tps("t", 0, 1)


def test_leader_assigns_with_the_chosen_assignor():
    ctx = MemberCtx()
    ctx.subscribe("t")
    out = ctx.join_ok(member_id="a", leader="a", members=members_meta(["a", "b"]))
    sync = out[0]
    got = {m: decode_assignment(b).as_dict() for m, b in sync.assignments}
    assert got == {"a": {"t": (0, 1)}, "b": {"t": (2, 3)}}


def test_leader_rejoins_when_partition_count_changes():
    ctx = MemberCtx()
    ctx.subscribe("t")
    ctx.join_ok(member_id="a", leader="a", members=members_meta(["a"]))
    ctx.sync_ok({"t": [0, 1, 2, 3]})
    out = ctx.send(MetadataUpdated((("t", 6),), ctx.now))
    assert kinds(out) == ["CommitOffsets", "RunRevoked", "SendJoinGroup"]


def test_join_errors_reset_or_retry():
    ctx = MemberCtx()
    ctx.subscribe("t")
    assert kinds(ctx.join_error(E.REBALANCE_IN_PROGRESS)) == ["SendJoinGroup"]
    out = ctx.join_error(E.UNKNOWN_MEMBER_ID)
    assert kinds(out) == ["SendJoinGroup"] and out[0].member_id == ""
    out = ctx.join_error(E.NOT_COORDINATOR)
    assert kinds(out) == ["FindCoordinator"] and ctx.state == "JOINING"
    assert kinds(ctx.send(CoordinatorFound(ctx.now))) == ["SendJoinGroup"]


def test_coordinator_loading_retries_join_after_backoff():
    ctx = MemberCtx(retry_backoff_ms=100)
    ctx.subscribe("t")
    assert ctx.join_error(E.COORDINATOR_LOAD_IN_PROGRESS) == []
    assert ctx.member.next_deadline() == 100
    assert ctx.advance(50) == []
    assert kinds(ctx.advance(50)) == ["SendJoinGroup"]


def test_fatal_join_error():
    ctx = MemberCtx()
    ctx.subscribe("t")
    out = ctx.join_error(E.INVALID_SESSION_TIMEOUT)
    assert kinds(out) == ["Fatal"] and ctx.state == "FATAL"
    assert ctx.member.next_deadline() is None


# -- syncing ------------------------------------------------------------------------------


@pytest.mark.parametrize("error", [E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID])
def test_sync_errors_rejoin(error):
    ctx = MemberCtx()
    ctx.subscribe("t")
    ctx.join_ok()
    out = ctx.sync_error(error)
    assert kinds(out) == ["SendJoinGroup"] and ctx.state == "JOINING"
    assert out[0].member_id == ("" if error == E.UNKNOWN_MEMBER_ID else "m1")


def test_sync_coordinator_error_rejoins_after_rediscovery():
    ctx = MemberCtx()
    ctx.subscribe("t")
    ctx.join_ok()
    assert kinds(ctx.sync_error(E.NOT_COORDINATOR)) == ["FindCoordinator"]
    assert ctx.state == "JOINING"
    assert kinds(ctx.send(CoordinatorFound(ctx.now))) == ["SendJoinGroup"]


def test_fenced_instance_on_sync_is_fatal_and_loses_nothing_new():
    ctx = MemberCtx(group_instance_id="i1")
    ctx.subscribe("t")
    ctx.join_ok()
    out = ctx.sync_error(E.FENCED_INSTANCE_ID)
    assert kinds(out) == ["Fatal"] and ctx.state == "FATAL"


@pytest.mark.parametrize("error", [E.INVALID_REQUEST, E.UNKNOWN_SERVER_ERROR, E.GROUP_AUTHORIZATION_FAILED])
def test_an_unexpected_sync_error_is_raised_once_and_the_member_rejoins_as_itself(error):
    # Kafka's consumer: requestRejoin, the error raised from this poll, JoinGroup on the next.
    ctx = MemberCtx()
    ctx.subscribe("t")
    ctx.join_ok()
    out = ctx.sync_error(error)
    assert kinds(out) == ["SendJoinGroup", "Failed"] and ctx.state == "JOINING"
    assert out[0].member_id == "m1" and out[1].error == error
    ctx.join_ok()
    assert ctx.state == "SYNCING"


def test_stale_responses_are_ignored():
    ctx = MemberCtx()
    ctx.subscribe("t")
    first = ctx.last(SendJoinGroup)
    ctx.join_error(E.REBALANCE_IN_PROGRESS)
    from kgroup.member import JoinGroupAnswered

    assert ctx.send(JoinGroupAnswered(first.request_id, E.NONE, ctx.now, 1, "range", "x", "m1")) == []
    assert ctx.state == "JOINING"


# -- stable: heartbeats and their errors ------------------------------------------------


def test_heartbeat_schedule():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    assert ctx.member.next_deadline() == 1_000
    assert ctx.advance(999) == []
    out = ctx.advance(1)
    assert kinds(out) == ["SendHeartbeat"] and out[0].generation == 1
    assert ctx.advance(500) == []          # one heartbeat in flight at a time
    ctx.heartbeat_answer()
    assert ctx.member.next_deadline() == ctx.now + 1_000


def test_heartbeat_without_answer_for_session_timeout_rediscovers():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    ctx.poll()
    out = ctx.advance(10_000)
    assert kinds(out) == ["FindCoordinator"] and ctx.state == "STABLE"
    out = ctx.send(CoordinatorFound(ctx.now))
    assert kinds(out) == ["SendHeartbeat"]


def test_eager_rebalance_in_progress_revokes_all_then_rejoins():
    ctx = MemberCtx()
    ctx.stable({"t": [0, 1]})
    ctx.advance(1_000)
    out = ctx.heartbeat_answer(E.REBALANCE_IN_PROGRESS)
    assert out == [CommitOffsets(tps("t", 0, 1), 1, "m1"), RunRevoked(tps("t", 0, 1)), out[2]]
    assert isinstance(out[2], SendJoinGroup) and ctx.member.owned == frozenset()


def test_eager_without_auto_commit_does_not_commit_on_revoke():
    ctx = MemberCtx(auto_commit=False)
    ctx.stable({"t": [0, 1]})
    ctx.advance(1_000)
    assert kinds(ctx.heartbeat_answer(E.REBALANCE_IN_PROGRESS)) == ["RunRevoked", "SendJoinGroup"]


@pytest.mark.parametrize("error", [E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID])
def test_generation_errors_lose_partitions_and_rejoin(error):
    ctx = MemberCtx()
    ctx.stable({"t": [0, 1]})
    ctx.advance(1_000)
    out = ctx.heartbeat_answer(error)
    assert out[0] == RunLost(tps("t", 0, 1)) and kinds(out)[1:] == ["SendJoinGroup"]
    assert ctx.member.generation == -1


def test_fenced_instance_on_heartbeat_is_fatal():
    ctx = MemberCtx(group_instance_id="i1")
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    out = ctx.heartbeat_answer(E.FENCED_INSTANCE_ID)
    assert kinds(out) == ["RunLost", "Fatal"] and ctx.state == "FATAL"
    assert ctx.member.owned == frozenset()


def test_heartbeat_coordinator_error_keeps_partitions():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    assert kinds(ctx.heartbeat_answer(E.NOT_COORDINATOR)) == ["FindCoordinator"]
    assert ctx.state == "STABLE" and ctx.member.owned == tps("t", 0)


def test_request_failure_rediscovers_coordinator():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    out = ctx.advance(1_000)
    assert kinds(ctx.send(RequestFailed(out[0].request_id, ctx.now))) == ["FindCoordinator"]


def test_commit_errors_feed_the_member():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    out = ctx.send(CommitAnswered(E.ILLEGAL_GENERATION, ctx.now))
    assert kinds(out) == ["RunLost", "SendJoinGroup"]


# -- cooperative -----------------------------------------------------------------------


def test_cooperative_rebalance_keeps_partitions_and_revokes_only_what_moves():
    ctx = MemberCtx(assignors=("cooperative-sticky",))
    assert ctx.member.cooperative
    ctx.stable({"t": [0, 1, 2, 3]}, protocol="cooperative-sticky")
    ctx.advance(1_000)
    out = ctx.heartbeat_answer(E.REBALANCE_IN_PROGRESS)
    assert kinds(out) == ["SendJoinGroup"] and ctx.member.owned == tps("t", 0, 1, 2, 3)
    sub = decode_subscription(out[0].protocols[0][1])
    assert sub.owned_partitions == (("t", (0, 1, 2, 3)),) and sub.generation_id == 1
    ctx.join_ok(generation=2, protocol="cooperative-sticky")
    out = ctx.sync_ok({"t": [0, 1]})
    # revoke what moved, assign nothing new, then rejoin for the second round
    assert out[:3] == [CommitOffsets(tps("t", 2, 3), 2, "m1"), RunRevoked(tps("t", 2, 3)), RunAssigned(frozenset())]
    assert isinstance(out[3], SendJoinGroup) and ctx.state == "JOINING"
    assert ctx.member.owned == tps("t", 0, 1)
    ctx.join_ok(generation=3, protocol="cooperative-sticky")
    out = ctx.sync_ok({"t": [0, 1]})
    assert out == [RunAssigned(frozenset())] and ctx.state == "STABLE"


def test_cooperative_subscription_change_revokes_only_dropped_topics():
    ctx = MemberCtx(assignors=("cooperative-sticky",))
    ctx.stable({"a": [0], "b": [0]}, topics=("a", "b"), protocol="cooperative-sticky")
    out = ctx.send(Subscribe(("a",), ctx.now))
    assert kinds(out) == ["CommitOffsets", "RunRevoked", "SendJoinGroup"]
    assert out[1] == RunRevoked(tps("b", 0)) and ctx.member.owned == tps("a", 0)


def test_mixed_assignors_fall_back_to_eager():
    assert not MemberCtx(assignors=("range", "cooperative-sticky")).member.cooperative


# -- poll timeout, unsubscribe, close --------------------------------------------------


def test_poll_timeout_leaves_and_loses_then_rejoins_on_poll():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    for _ in range(29):
        ctx.advance(1_000)
        if isinstance(ctx.log[-1], SendHeartbeat):
            ctx.heartbeat_answer()
    out = ctx.advance(1_000)
    assert kinds(out) == ["RunLost", "SendLeaveGroup"] and ctx.state == "UNJOINED"
    assert out[1].member_id == "m1" and ctx.member.member_id == ""
    assert ctx.advance(60_000) == []
    out = ctx.poll()
    assert kinds(out) == ["SendJoinGroup"] and out[0].member_id == ""


def test_static_member_poll_timeout_sends_no_leave():
    ctx = MemberCtx(group_instance_id="i1")
    ctx.stable({"t": [0]})
    ctx.now = 29_999
    ctx.poll()
    ctx.heartbeat_answer() if isinstance(ctx.log[-1], SendHeartbeat) else None
    out = ctx.advance(30_000)
    assert "SendLeaveGroup" not in kinds(out) and "RunLost" in kinds(out)


def test_close_revokes_and_leaves_dynamic_member():
    ctx = MemberCtx()
    ctx.stable({"t": [0]})
    out = ctx.send(Close(ctx.now))
    assert kinds(out) == ["CommitOffsets", "RunRevoked", "SendLeaveGroup"] and ctx.state == "LEFT"
    assert ctx.send(CoordinatorFound(ctx.now)) == []


def test_close_of_static_member_does_not_leave():
    ctx = MemberCtx(group_instance_id="i1", auto_commit=False)
    ctx.stable({"t": [0]})
    assert kinds(ctx.send(Close(ctx.now))) == ["RunRevoked"]


def test_unsubscribe_revokes_and_leaves():
    ctx = MemberCtx(auto_commit=False)
    ctx.stable({"t": [0]})
    out = ctx.send(Unsubscribe(ctx.now))
    assert kinds(out) == ["RunRevoked", "SendLeaveGroup"] and ctx.state == "UNJOINED"
    assert ctx.member.next_deadline() is None


def test_illegal_transition_raises_and_keeps_state():
    m = ClassicMemberMachine(MemberConfig(group_id="g"))
    with pytest.raises(IllegalMemberTransition):
        m._to(ClassicState.STABLE)
    assert m.state is ClassicState.UNJOINED
