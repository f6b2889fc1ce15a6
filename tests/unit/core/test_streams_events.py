"""Group events of streams groups (KIP-1071), from the pure core on a manual clock.

A streams group is a modern group (core/modern_group.py): its handlers carry an event
journal, which reads the Result's streams records as it reads a consumer group's. What a
member holds is shown as the source partitions of its active tasks (task (s, p) reads
partition p of subtopology s's source topics), as the views show it.
"""

from __future__ import annotations

from kgroup.core.group_events import EventKind as K
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest

from tests.unit.core.test_group_events import EventContext, kinds, of
from tests.unit.core.test_streams_scenarios import REPARTITION, SESSION, Streams, ready_topics, set_topics


def sources(*partitions: int) -> tuple[tuple[str, int], ...]:
    """The source partitions of tasks 0_p and 1_p for each p (`input` and the repartition topic)."""
    return tuple(sorted((topic, p) for p in partitions for topic in ("input", REPARTITION)))


def ready_app(ctx: EventContext) -> Streams:
    """The app, its topics all there."""
    ready_topics(ctx)
    return Streams(ctx)


def two_members(ctx: EventContext) -> Streams:
    app = ready_app(ctx)
    app.hb("a")
    app.hb("b")
    app.settle("a", "b")
    ctx.take()
    return app


def test_kip1071_the_first_member_of_a_streams_group_is_reported_joined_assigned_and_settled():
    ctx = EventContext()
    app = ready_app(ctx)
    app.hb("a")
    events = ctx.take()
    assert kinds(events) == ["member_joined", "rebalance_started", "assignment_changed", "rebalance_completed"]
    assert {e.protocol for e in events} == {"streams"}
    assert [e.generation for e in events] == [2, 2, 2, 2]              # a streams group starts at 2
    assert events[2].member == "a" and events[2].partitions == sources(0, 1, 2, 3)
    assert events[-1].state == "Stable" == app.group_().state().value
    # A steady heartbeat writes nothing and names no group: no events.
    app.hb("a")
    assert ctx.take() == []


def test_kip1071_a_second_member_moves_tasks_only_after_the_first_revoked_them():
    ctx = EventContext()
    app = ready_app(ctx)
    app.hb("a")
    ctx.take()
    app.hb("b")
    joined = ctx.take()
    assert kinds(joined) == ["member_joined", "rebalance_started"]
    assert joined[0].member == "b" and joined[1].generation == 3 and joined[1].state == "Reconciling"
    app.settle("a", "b")
    rest = ctx.take()
    changed = [(e.member, e.partitions) for e in of(rest, K.ASSIGNMENT_CHANGED)]
    assert [m for m, _ in changed] == ["a", "b"]                        # a gave up before b got
    held = {m: set(p) for m, p in changed}
    assert held["a"].isdisjoint(held["b"]) and held["a"] | held["b"] == set(sources(0, 1, 2, 3))
    completed, = of(rest, K.REBALANCE_COMPLETED)
    assert rest[-1] is completed and completed.generation == 3 and completed.state == "Stable"


def test_kip1071_a_streams_member_leaving_is_member_left_and_a_new_epoch():
    ctx = EventContext()
    app = two_members(ctx)
    app.leave("b")
    events = ctx.take()
    assert kinds(events) == ["member_left", "rebalance_started"]
    assert events[0].member == "b" and events[1].generation == 4 and events[1].reason == "member_left"
    app.settle("a")
    changed, completed = ctx.take()
    assert changed.member == "a" and changed.partitions == sources(0, 1, 2, 3)
    assert completed.kind is K.REBALANCE_COMPLETED and completed.generation == 4


def test_kip1071_a_static_streams_member_steps_out_and_its_new_id_takes_its_place():
    ctx = EventContext()
    app = ready_app(ctx)
    app.hb("a", instance="i-a")
    app.settle("a")
    ctx.take()
    app.leave("a", epoch=-2, instance="i-a")
    left, state = ctx.take()
    assert left.kind is K.MEMBER_LEFT and left.as_dict()["temporary"] is True and left.member_epoch == -2
    assert state.kind is K.GROUP_STATE
    app.hb("a2", instance="i-a")
    joined = of(ctx.take(), K.MEMBER_JOINED)
    assert [(e.member, e.replaced) for e in joined] == [("a2", "a")]


def test_kip1071_a_streams_session_that_runs_out_is_member_expired_and_the_group_ends_empty():
    ctx = EventContext()
    two_members(ctx)
    ctx.advance(SESSION + 1)
    events = ctx.take()
    expired = of(events, K.MEMBER_EXPIRED)
    assert sorted(e.member for e in expired) == ["a", "b"]
    assert {e.reason for e in expired} == {"session timeout"}
    assert events[-1].state == "Empty"


def test_kip1071_a_deleted_streams_group_is_reported_dead():
    ctx = EventContext()
    app = ready_app(ctx)
    app.hb("a")
    app.leave("a")
    assert ctx.take()[-1].state == "Empty"
    ctx.delete_groups("app")
    dead, = ctx.take()
    assert dead.kind is K.GROUP_STATE and dead.state == "Dead" and dead.protocol == "streams"
    assert "app" not in ctx.coord.streams_groups


def test_kip1071_a_streams_group_waits_not_ready_for_its_internal_topics_then_rebalances():
    ctx = EventContext()
    set_topics(ctx, input=4)
    app = Streams(ctx)
    app.hb("a")
    events = ctx.take()
    assert kinds(events) == ["member_joined", "rebalance_started"]
    assert events[-1].state == "NotReady" == app.group_().state().value
    ready_topics(ctx)                                    # the broker created them
    started, = ctx.take()
    assert started.kind is K.REBALANCE_STARTED and started.reason == "topic metadata changed"
    assert started.generation == 3 and started.state == "Assigning"
    app.hb("a")
    events = ctx.take()
    assert kinds(events) == ["assignment_changed", "rebalance_completed"]
    assert events[0].partitions == sources(0, 1, 2, 3)


def test_kip1071_the_events_replay_as_the_group_does():
    """The state each event reports after a change is the state the group has once the
    change's records are replayed (the journal reads them as replay takes them)."""
    ctx = EventContext()
    app = ready_app(ctx)
    for step in (lambda: app.hb("a"), lambda: app.hb("b"), lambda: app.settle("a", "b"),
                 lambda: app.leave("a"), lambda: app.settle("b")):
        step()
        events = ctx.take()
        if events:
            assert events[-1].state == app.group_().state().value
            assert events[-1].generation == app.group_().epoch


def test_kip1071_the_control_apis_rebalance_and_expiry_of_a_streams_group_are_reported():
    ctx = EventContext()
    app = two_members(ctx)
    assert ctx.call(ctx.coord.rebalance_group, GroupControlRequest("app")).response == "app"
    started, = ctx.take()
    assert started.kind is K.REBALANCE_STARTED and started.reason == "rebalance requested"
    assert started.generation == 4
    app.settle("a", "b")
    ctx.take()
    assert ctx.call(ctx.coord.expire_member, ExpireMemberRequest("app", "b")).response == "b"
    expired, started = ctx.take()
    assert expired.kind is K.MEMBER_EXPIRED and expired.member == "b" and expired.reason == "expired on request"
    assert started.kind is K.REBALANCE_STARTED and started.generation == 5


def test_kip1071_a_streams_member_that_never_revokes_its_tasks_is_reported_fenced():
    ctx = EventContext()
    app = ready_app(ctx)
    app.hb("a")
    held = app.held["a"]
    app.hb("b")
    ctx.take()
    for _ in range(8):                                  # a reports all its old tasks all along
        ctx.advance(5_000)
        if "a" in app.group_().members:
            app.held["a"] = held
            app.hb("a")
        app.hb("b")
    fenced, = of(ctx.take(), K.MEMBER_FENCED)
    assert fenced.member == "a" and fenced.reason == "revocation timeout"
