"""Every consumer-protocol member transition as a scenario on a manual clock."""

from __future__ import annotations

import pytest

from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    Close,
    CommitOffsets,
    CommitAnswered,
    ConsumerGroupHeartbeatAnswered,
    ConsumerMemberMachine,
    ConsumerState,
    CoordinatorFound,
    Fatal,
    FindCoordinator,
    IllegalMemberTransition,
    MemberConfig,
    Poll,
    RefreshTopicNames,
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

NAMES = (("id-t", "t"), ("id-u", "u"))


class ConsumerCtx:
    """A manual clock and a scripted coordinator for one ``ConsumerMemberMachine``."""

    def __init__(self, **config) -> None:
        config.setdefault("group_id", "g")
        config.setdefault("heartbeat_interval_ms", 1_000)
        config.setdefault("max_poll_interval_ms", 30_000)
        self.now = 0
        self.member = ConsumerMemberMachine(MemberConfig(**config), member_id="m1", now_ms=0)
        self.log: list = []

    @property
    def state(self) -> str:
        return self.member.state.name

    @property
    def path(self) -> list[str]:
        return [s.name for s in self.member.path]

    def send(self, event):
        actions = self.member.handle(event)
        self.log.extend(actions)
        return actions

    def advance(self, ms: int):
        self.now += ms
        return self.send(Tick(self.now))

    def poll(self):
        return self.send(Poll(self.now))

    def subscribe(self, *topics: str, coordinator: bool = True, names: bool = True):
        out = []
        if names:
            out += self.send(TopicNames(NAMES, self.now))
        out += self.send(Subscribe(topics, self.now))
        if coordinator:
            out += self.send(CoordinatorFound(self.now))
        return out

    def last_heartbeat(self) -> SendConsumerGroupHeartbeat:
        return [a for a in self.log if isinstance(a, SendConsumerGroupHeartbeat)][-1]

    def answer(self, parts: dict[str, list[int]] | None = None, epoch: int | None = None,
               error: E = E.NONE, interval: int = 1_000):
        req = self.last_heartbeat()
        if epoch is None:
            epoch = max(req.member_epoch, 0) + (1 if parts is not None else 0)
        asg = None if parts is None else tuple((f"id-{t}", tuple(sorted(ps)))
                                              for t, ps in sorted(parts.items()))
        return self.send(ConsumerGroupHeartbeatAnswered(
            req.request_id, error, self.now, "m1" if error == E.NONE else "",
            epoch if error == E.NONE else -1, interval if error == E.NONE else 0, asg))

    def stable(self, parts: dict[str, list[int]], topics=("t",)):
        self.subscribe(*topics)
        self.answer(parts)       # the join answer: reconcile, ack at once
        return self.answer()     # the ack's answer: STABLE


def kinds(actions):
    return [type(a).__name__ for a in actions]


def tps(topic, *ps):
    return frozenset((topic, p) for p in ps)


# -- the table ----------------------------------------------------------------------------


def test_every_state_is_in_the_table_and_fatal_is_terminal():
    assert set(_TRANSITIONS) == set(ConsumerState)
    assert _TRANSITIONS[ConsumerState.FATAL] == frozenset()


def test_an_illegal_move_raises_and_leaves_the_state_unchanged():
    m = ConsumerMemberMachine(MemberConfig(group_id="g"))
    with pytest.raises(IllegalMemberTransition):
        m._to(ConsumerState.STABLE)
    assert m.state is ConsumerState.UNSUBSCRIBED


# -- joining ------------------------------------------------------------------------------


def test_subscribe_without_coordinator_asks_for_it_then_joins_with_a_full_request():
    ctx = ConsumerCtx(server_assignor="range")
    out = ctx.subscribe("t", coordinator=False)
    assert kinds(out) == ["FindCoordinator"] and ctx.state == "JOINING"
    out = ctx.send(CoordinatorFound(ctx.now))
    assert kinds(out) == ["SendConsumerGroupHeartbeat"]
    hb = out[0]
    assert (hb.member_id, hb.member_epoch, hb.full) == ("m1", 0, True)
    assert hb.subscribed_topic_names == ("t",) and hb.rebalance_timeout_ms == 30_000
    assert hb.server_assignor == "range" and hb.owned == ()


def test_join_answer_reconciles_assigns_and_acknowledges_immediately():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    out = ctx.answer({"t": [0, 1]}, epoch=3)
    assert ctx.path == ["RECONCILING", "ACKNOWLEDGING"]
    assert kinds(out) == ["RunAssigned", "SendConsumerGroupHeartbeat"]
    assert out[0] == RunAssigned(tps("t", 0, 1))
    ack = out[1]
    # partial: only what changed (the owned partitions), at the new epoch
    assert ack.member_epoch == 3 and not ack.full and ack.owned == (("id-t", (0, 1)),)
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1
    assert ack.server_assignor is None
    assert ctx.member.owned == tps("t", 0, 1) and ctx.member.in_group


def test_ack_answer_makes_the_member_stable_and_heartbeats_follow_the_interval():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    ctx.answer({"t": [0]})
    out = ctx.answer(interval=2_000)
    assert out == [] and ctx.state == "STABLE"
    assert ctx.advance(1_999) == []
    out = ctx.advance(1)
    assert kinds(out) == ["SendConsumerGroupHeartbeat"]
    hb = out[0]
    # nothing changed: every optional field is null
    assert (hb.subscribed_topic_names, hb.owned, hb.rebalance_timeout_ms) == (None, None, -1)


def test_join_with_an_empty_assignment_goes_straight_to_stable():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    out = ctx.answer({})
    assert out == [] and ctx.path == ["STABLE"]


def test_join_answer_without_assignment_still_leaves_joining():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    ctx.answer(None, epoch=1)
    assert ctx.state == "STABLE"


def test_unknown_topic_ids_wait_in_reconciling_for_their_names():
    ctx = ConsumerCtx()
    ctx.subscribe("t", names=False)
    out = ctx.answer({"t": [0, 1]})
    assert kinds(out) == ["RefreshTopicNames"] and out[0] == RefreshTopicNames(("id-t",))
    assert ctx.state == "RECONCILING" and ctx.member.owned == frozenset()
    # asked again after a while if no names came
    assert kinds(ctx.advance(1_000)) == ["RefreshTopicNames", "SendConsumerGroupHeartbeat"]
    ctx.answer()
    out = ctx.send(TopicNames(NAMES, ctx.now))
    assert kinds(out) == ["RunAssigned", "SendConsumerGroupHeartbeat"]
    assert ctx.state == "ACKNOWLEDGING"
    ctx.answer()
    assert ctx.state == "STABLE"


# -- reconciliation -----------------------------------------------------------------------


def test_new_assignment_commits_then_revokes_then_assigns_then_acks():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0, 1, 2]})
    ctx.advance(1_000)
    out = ctx.answer({"t": [2, 3]}, epoch=5)
    assert ctx.path == ["RECONCILING", "ACKNOWLEDGING"]
    assert kinds(out) == ["CommitOffsets", "RunRevoked", "RunAssigned",
                          "SendConsumerGroupHeartbeat"]
    assert out[0] == CommitOffsets(tps("t", 0, 1), 5, "m1")
    assert out[1] == RunRevoked(tps("t", 0, 1)) and out[2] == RunAssigned(tps("t", 3))
    assert out[3].owned == (("id-t", (2, 3)),)


def test_revocation_only_then_assignment_in_a_later_step():
    # The coordinator first takes partitions away (same epoch), then gives new ones.
    ctx = ConsumerCtx(auto_commit=False)
    ctx.stable({"t": [0, 1]})
    ctx.advance(1_000)
    out = ctx.answer({"t": [1]}, epoch=1)
    assert kinds(out) == ["RunRevoked", "RunAssigned", "SendConsumerGroupHeartbeat"]
    assert out[1] == RunAssigned(frozenset())
    out = ctx.answer({"t": [1], "u": [0]}, epoch=2)
    assert ctx.path == ["RECONCILING", "ACKNOWLEDGING"]
    assert out[0] == RunAssigned(tps("u", 0))
    ctx.answer()
    assert ctx.state == "STABLE" and ctx.member.owned == tps("t", 1) | tps("u", 0)


def test_a_newer_target_in_the_ack_answer_reconciles_again():
    ctx = ConsumerCtx(auto_commit=False)
    ctx.subscribe("t")
    ctx.answer({"t": [0, 1]})
    out = ctx.answer({"t": [0]})
    assert ctx.path == ["RECONCILING", "ACKNOWLEDGING"]
    assert out[0] == RunRevoked(tps("t", 1))


def test_same_assignment_again_changes_nothing():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    assert ctx.answer({"t": [0]}, epoch=7) == [] and ctx.state == "STABLE"
    assert ctx.member.member_epoch == 7


def test_subscription_change_is_sent_at_once_and_only_it():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    out = ctx.send(Subscribe(("t", "u"), ctx.now))
    assert kinds(out) == ["SendConsumerGroupHeartbeat"]
    hb = out[0]
    assert hb.subscribed_topic_names == ("t", "u") and hb.owned is None and not hb.full


# -- fencing ------------------------------------------------------------------------------


@pytest.mark.parametrize("error", [E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID])
def test_fenced_loses_everything_and_rejoins_at_epoch_zero(error):
    ctx = ConsumerCtx()
    ctx.stable({"t": [0, 1]})
    ctx.advance(1_000)
    out = ctx.answer(error=error)
    assert ctx.path == ["FENCED", "JOINING"]
    assert kinds(out) == ["RunLost", "SendConsumerGroupHeartbeat"]
    assert out[0] == RunLost(tps("t", 0, 1)) and ctx.member.owned == frozenset()
    hb = out[1]
    assert hb.member_epoch == 0 and hb.full and hb.member_id == "m1" and hb.owned == ()
    assert not any(isinstance(a, CommitOffsets) for a in out)  # lost, never committed


def test_fenced_while_acknowledging():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    ctx.answer({"t": [0]})
    out = ctx.answer(error=E.FENCED_MEMBER_EPOCH)
    assert ctx.path == ["FENCED", "JOINING"] and out[0] == RunLost(tps("t", 0))


def test_commit_fenced_makes_the_next_heartbeat_immediate():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    out = ctx.send(CommitAnswered(E.STALE_MEMBER_EPOCH, ctx.now))
    assert kinds(out) == ["SendConsumerGroupHeartbeat"]


# -- errors -------------------------------------------------------------------------------


def test_coordinator_moved_keeps_partitions_and_sends_a_full_request_when_found():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    out = ctx.answer(error=E.NOT_COORDINATOR)
    assert kinds(out) == ["FindCoordinator"] and ctx.state == "STABLE"
    assert ctx.member.owned == tps("t", 0)
    out = ctx.send(CoordinatorFound(ctx.now))
    assert kinds(out) == ["SendConsumerGroupHeartbeat"]
    hb = out[0]
    assert hb.full and hb.member_epoch == 1 and hb.owned == (("id-t", (0,)),)
    assert hb.subscribed_topic_names == ("t",) and hb.rebalance_timeout_ms == 30_000


def test_failed_request_rediscovers_the_coordinator():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    out = ctx.send(RequestFailed(ctx.last_heartbeat().request_id, ctx.now))
    assert kinds(out) == ["FindCoordinator"]
    assert ctx.member.next_deadline() == ctx.member._last_poll + 30_000


def test_load_in_progress_retries_after_backoff_with_a_full_request():
    ctx = ConsumerCtx(retry_backoff_ms=100)
    ctx.subscribe("t")
    assert ctx.answer(error=E.COORDINATOR_LOAD_IN_PROGRESS) == []
    assert ctx.advance(99) == []
    out = ctx.advance(1)
    assert kinds(out) == ["SendConsumerGroupHeartbeat"] and out[0].full


@pytest.mark.parametrize("error", [E.UNSUPPORTED_ASSIGNOR, E.INVALID_REQUEST,
                                   E.GROUP_AUTHORIZATION_FAILED, E.FENCED_INSTANCE_ID,
                                   E.UNRELEASED_INSTANCE_ID, E.GROUP_MAX_SIZE_REACHED])
def test_unrecoverable_errors_are_fatal_and_lose_the_partitions(error):
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.advance(1_000)
    out = ctx.answer(error=error)
    assert ctx.path == ["FATAL"] and ctx.member.fatal_error == error
    assert kinds(out) == ["RunLost", "Fatal"] and out[1].error == error
    assert ctx.advance(100_000) == [] and ctx.member.next_deadline() is None


def test_fatal_while_joining_has_nothing_to_lose():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    out = ctx.answer(error=E.UNSUPPORTED_ASSIGNOR)
    assert out == [Fatal(E.UNSUPPORTED_ASSIGNOR, "ConsumerGroupHeartbeat failed")]


def test_stale_responses_are_ignored():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    old = ctx.last_heartbeat().request_id
    assert ctx.send(ConsumerGroupHeartbeatAnswered(old, E.FENCED_MEMBER_EPOCH, ctx.now)) == []
    assert ctx.state == "STABLE"


# -- poll timeout -------------------------------------------------------------------------


def test_poll_timeout_goes_stale_loses_partitions_leaves_and_rejoins_on_poll():
    ctx = ConsumerCtx(group_instance_id="i-1")
    ctx.stable({"t": [0]})
    for _ in range(29):
        ctx.advance(1_000)
        if ctx.member._in_flight:
            ctx.answer()
    out = ctx.advance(1_000)
    assert ctx.path == ["STALE"]
    assert kinds(out) == ["RunLost", "SendConsumerGroupHeartbeat"]
    assert out[1].member_epoch == -1  # even a static member: its partitions must move
    assert ctx.member.next_deadline() is None and ctx.advance(60_000) == []
    out = ctx.poll()
    assert ctx.path == ["JOINING"]
    assert kinds(out) == ["SendConsumerGroupHeartbeat"] and out[0].member_epoch == 0


def test_polling_keeps_the_member_in_the_group():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    for _ in range(60):
        ctx.advance(1_000)
        ctx.poll()
        if ctx.member._in_flight:
            ctx.answer()
    assert ctx.state == "STABLE"


# -- leaving ------------------------------------------------------------------------------


def test_close_commits_revokes_then_leaves_with_epoch_minus_one():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0, 1]})
    out = ctx.send(Close(ctx.now))
    assert ctx.path == ["PREPARE_LEAVING", "LEAVING"]
    assert kinds(out) == ["CommitOffsets", "RunRevoked", "SendConsumerGroupHeartbeat"]
    assert out[2].member_epoch == -1 and out[2].member_id == "m1"
    ctx.answer(epoch=-1)
    assert ctx.path == ["UNSUBSCRIBED"]
    assert ctx.advance(100_000) == [] and ctx.member.next_deadline() is None


def test_static_member_close_leaves_with_epoch_minus_two():
    ctx = ConsumerCtx(group_instance_id="i-1")
    ctx.stable({"t": [0]})
    out = ctx.send(Close(ctx.now))
    leave = out[-1]
    assert leave.member_epoch == -2 and leave.instance_id == "i-1"


def test_leave_that_fails_still_ends_unsubscribed():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.send(Unsubscribe(ctx.now))
    assert ctx.state == "LEAVING"
    ctx.send(RequestFailed(ctx.last_heartbeat().request_id, ctx.now))
    assert ctx.state == "UNSUBSCRIBED"


def test_unsubscribe_then_subscribe_again_rejoins_after_the_leave():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.send(Unsubscribe(ctx.now))
    leave = ctx.last_heartbeat()
    ctx.send(Subscribe(("u",), ctx.now))
    assert ctx.state == "LEAVING"
    out = ctx.send(ConsumerGroupHeartbeatAnswered(leave.request_id, E.NONE, ctx.now))
    assert ctx.path == ["UNSUBSCRIBED", "JOINING"]
    assert out[0].member_epoch == 0 and out[0].subscribed_topic_names == ("u",)


def test_close_without_coordinator_goes_straight_to_unsubscribed():
    ctx = ConsumerCtx()
    ctx.subscribe("t", coordinator=False)
    out = ctx.send(Close(ctx.now))
    assert out == [] and ctx.path == ["PREPARE_LEAVING", "UNSUBSCRIBED"]


def test_close_when_fatal_does_nothing():
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    ctx.answer(error=E.INVALID_REQUEST)
    assert ctx.send(Close(ctx.now)) == [] and ctx.state == "FATAL"


def test_close_when_stale_does_not_leave_twice():
    ctx = ConsumerCtx(max_poll_interval_ms=5_000)
    ctx.stable({"t": [0]})
    for _ in range(5):
        ctx.advance(1_000)
        if ctx.member._in_flight:
            ctx.answer()
    assert ctx.state == "STALE"
    assert ctx.send(Close(ctx.now)) == [] and ctx.path == ["UNSUBSCRIBED"]


def test_events_after_close_are_ignored():
    ctx = ConsumerCtx()
    ctx.stable({"t": [0]})
    ctx.send(Close(ctx.now))
    ctx.answer(epoch=-1)
    assert ctx.send(Subscribe(("t",), ctx.now)) == [] and ctx.state == "UNSUBSCRIBED"
    assert isinstance(ctx.member.handle(Poll(ctx.now)), list)


def test_find_coordinator_is_not_repeated_while_searching():
    ctx = ConsumerCtx()
    ctx.subscribe("t", coordinator=False)
    assert ctx.advance(1_000) == []
    assert FindCoordinator() in ctx.log


# -- the remaining edges out of RECONCILING and ACKNOWLEDGING -------------------------------


def reconciling_without_names() -> ConsumerCtx:
    ctx = ConsumerCtx()
    ctx.subscribe("t", names=False)
    ctx.answer({"t": [0]})
    assert ctx.state == "RECONCILING"
    return ctx


def acknowledging() -> ConsumerCtx:
    ctx = ConsumerCtx()
    ctx.subscribe("t")
    ctx.answer({"t": [0]})
    assert ctx.state == "ACKNOWLEDGING"
    return ctx


@pytest.mark.parametrize("start", [reconciling_without_names, acknowledging])
@pytest.mark.parametrize("move, expected", [
    ("fenced", ["FENCED", "JOINING"]),
    ("fatal", ["FATAL"]),
    ("poll_timeout", ["STALE"]),
    ("close", ["PREPARE_LEAVING", "LEAVING"]),
])
def test_edges_out_of_reconciling_and_acknowledging(start, move, expected):
    ctx = start()
    if move in ("fenced", "fatal"):
        if ctx.member._in_flight is None:
            ctx.advance(1_000)
        ctx.answer(error=E.FENCED_MEMBER_EPOCH if move == "fenced" else E.INVALID_REQUEST)
    elif move == "poll_timeout":
        ctx.advance(30_000)
    else:
        ctx.send(Close(ctx.now))
    assert ctx.path == expected
    assert ctx.member.owned == frozenset()


def test_reconciling_goes_stable_when_the_unnamed_topic_is_taken_away():
    ctx = reconciling_without_names()
    ctx.advance(1_000)
    out = ctx.answer({})
    assert out == [] and ctx.path == ["STABLE"]
