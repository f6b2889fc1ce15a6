"""Group events from the handlers (core/group_events.py, core/event_journal.py), on a manual clock.

`EventContext` plays the broker's part as `broker/observe/event_stream.py` does: after every
handler or timer (records replayed) it takes the events the Result carries.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from kgroup.assignors.consumer_protocol import encode_assignment
from kgroup.assignors.spec import Assignment
from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import GroupState
from kgroup.core.group_events import (
    EventKind as K,
    GroupDelta,
    GroupEvent,
    GroupStatus,
    MemberSnap,
    compose,
)
from kgroup.core.messages import LeavingMember
from kgroup.core.result import Departure
from kgroup.group_types import CLASSIC

from tests.unit.core.groupctx import GroupContext
from tests.unit.core.test_consumer_scenarios import settle


class EventContext(GroupContext):
    """A GroupContext that keeps the group events each call and timer brings, as the
    broker's event stream takes them from every Result it applies."""

    def __post_init__(self) -> None:
        self.events: list[GroupEvent] = []
        self.results = []
        super().__post_init__()

    def apply(self, result) -> None:
        super().apply(result)
        self.results.append(result)
        self.events += result.events

    def take(self) -> list[GroupEvent]:
        events, self.events = self.events, []
        return events


def kinds(events) -> list[str]:
    return [e.kind.value for e in events]


def of(events, kind: K) -> list[GroupEvent]:
    return [e for e in events if e.kind is kind]


def assignment(*partitions: tuple[str, int]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return encode_assignment(Assignment(tuple((t, tuple(ps)) for t, ps in by_topic.items())), 0)


def classic_round(ctx: EventContext, joins, plan: dict[int, list[tuple[str, int]]], group: str = "g"):
    """Everyone answered: the leader syncs `plan` (join index -> partitions), then the rest."""
    ctx.run_until(lambda: all(j.done for j in joins))
    members = [j.response.member_id for j in joins]
    generation = joins[0].response.generation_id
    leader = joins[0].response.leader
    assignments = {members[i]: assignment(*tps) for i, tps in plan.items()}
    ctx.sync(group, leader, generation, assignments)
    for m in members:
        if m != leader:
            ctx.sync(group, m, generation)
    assert ctx.group(group).state.value == "Stable"
    return members, generation


# ---- classic ---------------------------------------------------------------------------------

def test_a_join_and_sync_round_reports_joins_the_rebalance_and_each_assignment():
    ctx = EventContext()
    joins = [ctx.join_new(), ctx.join_new()]
    (a, b), generation = classic_round(ctx, joins, {0: [("t", 0), ("t", 1)], 1: [("t", 2)]})
    events = ctx.take()
    assert kinds(events) == ["member_joined", "rebalance_started", "member_joined", "group_state",
                             "assignment_changed", "assignment_changed", "rebalance_completed"]
    assert [e.member for e in of(events, K.MEMBER_JOINED)] == [a, b]
    started, = of(events, K.REBALANCE_STARTED)
    assert started.generation == 0 and started.state == "PreparingRebalance"
    assert of(events, K.GROUP_STATE)[0].state == "CompletingRebalance"
    completed, = of(events, K.REBALANCE_COMPLETED)
    assert completed.generation == generation == 1 and completed.state == "Stable"
    assert {e.member: e.partitions for e in of(events, K.ASSIGNMENT_CHANGED)} == {
        a: (("t", 0), ("t", 1)), b: (("t", 2),)}
    assert all(e.protocol == "classic" and e.group == "g" for e in events)


def test_a_leave_reports_member_left_then_the_next_generation_moves_only_what_changed():
    ctx = EventContext()
    joins = [ctx.join_new(), ctx.join_new(), ctx.join_new()]
    (a, b, c), _ = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)], 2: [("t", 2)]})
    ctx.take()
    ctx.leave("g", c)
    left = ctx.take()
    assert kinds(left) == ["member_left", "rebalance_started"]
    assert left[0].member == c and left[0].reason == "LeaveGroup"
    assert left[1].generation == 1 and left[1].reason == "member_left"
    # a and b rejoin; the leader gives c's partition to b and leaves a alone.
    rejoins = [ctx.join("g", a), ctx.join("g", b)]
    _, generation = classic_round(ctx, rejoins, {0: [("t", 0)], 1: [("t", 1), ("t", 2)]})
    after = ctx.take()
    completed, = of(after, K.REBALANCE_COMPLETED)
    assert completed.generation == generation == 2
    changed = of(after, K.ASSIGNMENT_CHANGED)
    assert [(e.member, e.partitions) for e in changed] == [(b, (("t", 1), ("t", 2)))]


def test_a_session_expiry_reports_member_expired():
    ctx = EventContext()
    joins = [ctx.join_new(), ctx.join_new()]
    (a, b), generation = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)]})
    ctx.take()
    ctx.advance_alive(12_000, [a], generation)          # b stops heartbeating (session 10 s)
    events = ctx.take()
    expired, = of(events, K.MEMBER_EXPIRED)
    assert expired.member == b and expired.reason == "session timeout"
    assert kinds(events)[:2] == ["member_expired", "rebalance_started"]


def test_a_static_member_restart_is_one_join_replacing_its_old_id_without_a_rebalance():
    ctx = EventContext()
    joins = [ctx.join("g", instance="i-0"), ctx.join("g", instance="i-1")]
    (a, b), generation = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)]})
    ctx.take()
    again = ctx.join("g", instance="i-1")               # restarted: no member id
    assert again.error.name == "NONE" and again.response.generation_id == generation
    events = ctx.take()
    assert kinds(events) == ["member_joined"]
    joined, = events
    assert joined.instance == "i-1" and joined.replaced == b and joined.member != b
    assert joined.as_dict()["replaced"] == b


def test_a_member_past_the_group_size_limit_is_reported_fenced():
    ctx = EventContext(GroupConfig(initial_rebalance_delay_ms=0))
    joins = [ctx.join_new(), ctx.join_new()]
    (a, b), _ = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)]})
    ctx.coord.shard.config = ctx.coord.classic.config = GroupConfig(initial_rebalance_delay_ms=0,
                                                                     max_group_size=1)
    ctx.take()
    ctx.join("g", a)                                    # the leader rejoins: a rebalance
    refused = ctx.join("g", b)                          # one past the (lowered) limit
    assert refused.error.name == "GROUP_MAX_SIZE_REACHED"
    fenced, = of(ctx.take(), K.MEMBER_FENCED)
    assert fenced.member == b and fenced.reason == "JoinGroup"


def test_a_quiet_heartbeat_names_no_group_and_reports_nothing():
    ctx = EventContext()
    joins = [ctx.join_new(), ctx.join_new()]
    (a, b), generation = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)]})
    ctx.take()
    ctx.results.clear()
    for _ in range(5):
        ctx.heartbeat("g", a, generation)
        ctx.heartbeat("g", b, generation)
    assert all(not r.changes for r in ctx.results)      # nothing for the event stream to look at
    assert ctx.take() == []


def test_an_undecodable_classic_assignment_is_reported_with_null_partitions():
    ctx = EventContext()
    joins = [ctx.join_new()]
    ctx.run_until(lambda: joins[0].done)
    member = joins[0].response.member_id
    ctx.sync("g", member, joins[0].response.generation_id, {member: b"\x00\x07not-consumer-protocol"})
    changed, = of(ctx.take(), K.ASSIGNMENT_CHANGED)
    assert changed.partitions is None and changed.as_dict()["partitions"] is None


def test_a_deleted_group_is_reported_dead():
    ctx = EventContext()
    joins = [ctx.join_new()]
    (a,), _ = classic_round(ctx, joins, {0: [("t", 0)]})
    ctx.leave("g", a)
    assert of(ctx.take(), K.GROUP_STATE)[-1].state == "Empty"
    ctx.delete_groups("g")
    dead, = ctx.take()
    assert dead.kind is K.GROUP_STATE and dead.state == "Dead"


def test_leaving_by_instance_id_in_a_batch_reports_each_member():
    ctx = EventContext()
    joins = [ctx.join("g", instance="i-0"), ctx.join("g", instance="i-1")]
    (a, b), _ = classic_round(ctx, joins, {0: [("t", 0)], 1: [("t", 1)]})
    ctx.take()
    ctx.leave("g", LeavingMember("", "i-0"), LeavingMember("", "i-1"))
    events = ctx.take()
    assert [(e.member, e.instance) for e in of(events, K.MEMBER_LEFT)] == [(a, "i-0"), (b, "i-1")]
    assert of(events, K.GROUP_STATE)[-1].state == "Empty"


# ---- consumer protocol -----------------------------------------------------------------------

def test_consumer_group_epoch_bump_and_convergence():
    ctx = EventContext()
    ctx.set_topics(t=4)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    first = ctx.take()
    assert kinds(first) == ["member_joined", "rebalance_started", "assignment_changed", "rebalance_completed"]
    assert [e.generation for e in first] == [2, 2, 2, 2]       # a new group starts at epoch 1
    assert first[2].partitions == tuple(("t", p) for p in range(4)) and first[2].member_epoch == 2
    ctx.cg_heartbeat("b", 0, topics=["t"])
    joined = ctx.take()
    assert kinds(joined)[:2] == ["member_joined", "rebalance_started"]
    assert joined[1].generation == 3 and joined[1].state == "Reconciling"
    settle(ctx, ["a", "b"])
    assert ctx.cgroup().state() is GroupState.STABLE
    rest = ctx.take()
    completed, = of(rest, K.REBALANCE_COMPLETED)
    assert completed.generation == ctx.cgroup().epoch == 3
    # a gave two partitions up before b got them: a's change comes first.
    changed = [(e.member, e.partitions) for e in of(rest, K.ASSIGNMENT_CHANGED)]
    assert changed[0][0] == "a" and len(changed[0][1]) == 2
    assert changed[-1][0] == "b" and len(changed[-1][1]) == 2
    final = {m: set(p) for m, p in changed}
    assert final["a"].isdisjoint(final["b"]) and len(final["a"] | final["b"]) == 4
    assert rest[-1] is completed                       # after the assignments it waited for


def test_consumer_member_leaving_and_a_topic_change_bump_the_epoch():
    ctx = EventContext()
    ctx.set_topics(t=4)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.cg_heartbeat("b", 0, topics=["t"])
    settle(ctx, ["a", "b"])
    ctx.take()
    ctx.cg_heartbeat("b", -1)
    events = ctx.take()
    assert kinds(events) == ["member_left", "rebalance_started"]
    assert events[0].member == "b" and events[1].generation == 4
    settle(ctx, ["a"])
    ctx.take()
    ctx.set_topics(t=6)
    started, = ctx.take()
    assert started.kind is K.REBALANCE_STARTED and started.reason == "topic metadata changed"
    assert started.generation == 5


def test_consumer_static_member_temporary_leave_and_return():
    ctx = EventContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i-a")
    settle(ctx, ["a"])
    ctx.take()
    ctx.cg_heartbeat("a", -2, instance="i-a")
    left, state = ctx.take()
    assert left.kind is K.MEMBER_LEFT and left.as_dict()["temporary"] is True and left.member_epoch == -2
    assert state.kind is K.GROUP_STATE and state.state == "Reconciling"   # as Describe shows it
    ctx.cg_heartbeat("a2", 0, topics=["t"], instance="i-a")
    events = ctx.take()                                 # same assignment, same epoch: no rebalance
    assert kinds(events) == ["member_joined", "group_state"]
    assert events[0].replaced == "a" and events[0].member == "a2" and events[1].state == "Stable"


def test_a_consumer_member_that_never_revokes_is_reported_fenced():
    ctx = EventContext()
    ctx.set_topics(t=4)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    settle(ctx, ["a"])
    ctx.cg_heartbeat("b", 0, topics=["t"])
    ctx.cg_heartbeat("a", 2)                            # told to revoke; never does
    ctx.take()
    for _ in range(13):
        ctx.advance(5_000)
        if "a" in ctx.cgroup().members:
            ctx.cg_heartbeat("a", 2, owned=[("id-t", (0, 1, 2, 3))])
        ctx.cg_heartbeat("b", ctx.cgroup().members["b"].epoch)
    fenced, = of(ctx.take(), K.MEMBER_FENCED)
    assert fenced.member == "a" and fenced.reason == "revocation timeout"


def test_consumer_session_expiry_is_member_expired():
    ctx = EventContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.take()
    ctx.advance(46_000)                                 # consumer session 45 s
    events = ctx.take()
    assert kinds(events)[:2] == ["member_expired", "rebalance_started"]
    assert events[0].reason == "session timeout" and events[-1].state == "Empty"


# ---- format and the pure pieces --------------------------------------------------------------

def test_json_value_has_the_contract_fields_sorted_and_compact():
    e = GroupEvent(1_700_000_000_000, "g", "consumer", K.ASSIGNMENT_CHANGED, 3, "Reconciling",
                   member="m", instance=None, member_epoch=3, partitions=(("t", 0), ("t", 1)))
    raw = e.to_json()
    value = json.loads(raw)
    assert list(value) == sorted(value) and b" " not in raw
    assert value == {"v": 1, "time_ms": 1_700_000_000_000, "group": "g", "protocol": "consumer",
                     "kind": "assignment_changed", "member": "m", "instance": None, "generation": 3,
                     "member_epoch": 3, "state": "Reconciling", "partitions": [["t", 0], ["t", 1]],
                     "reason": None}


def test_a_change_that_moved_nothing_is_no_event_and_a_group_gone_is_dead():
    still = GroupStatus(CLASSIC, "Stable", 3, 3)
    assert compose(GroupDelta("g", "JoinGroup", Departure.FENCED, still, still), 0) == []
    gone, dead = compose(GroupDelta("g", "LeaveGroup", Departure.LEFT, still, None,
                                    departed=[MemberSnap("m-1", None)]), 5)
    assert gone.kind is K.MEMBER_LEFT and gone.member == "m-1" and gone.reason == "LeaveGroup"
    assert dead.kind is K.GROUP_STATE and dead.state == "Dead" and dead.time_ms == 5 and dead.generation == 3


# ---- random churn: rebalances complete in order ------------------------------------------------

CONSUMER_OPS = st.lists(st.tuples(st.sampled_from(["join", "beat", "all", "leave", "away", "wait", "long", "grow"]),
                                  st.integers(0, 3)), min_size=1, max_size=40)


@given(CONSUMER_OPS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_consumer_rebalances_complete_in_epoch_order_under_random_churn(ops):
    ctx = EventContext()
    partitions = 4
    ctx.set_topics(t=partitions)
    joined: dict[int, str] = {}

    def beat(i: int) -> None:
        mid = joined.get(i)
        group = ctx.coord.consumer_groups.get("cg")
        member = group.members.get(mid) if group is not None and mid else None
        if member is not None and member.epoch >= 0:
            ctx.cg_heartbeat(mid, member.epoch, owned=member.current.assigned,
                             instance=member.meta.instance_id)

    for op, i in ops:
        static = f"i-{i}" if i % 2 else None
        group = ctx.coord.consumer_groups.get("cg")
        mid = joined.get(i)
        member = group.members.get(mid) if group is not None and mid else None
        if op == "join" and (member is None or member.epoch == -2):
            mid = f"m{i}-{len(ctx.log)}"
            if ctx.cg_heartbeat(mid, 0, topics=["t"], instance=static).raised is None:
                joined[i] = mid
        elif op == "beat":
            beat(i)
        elif op == "all":
            for k in sorted(joined):
                beat(k)
        elif op == "leave" and member is not None and member.epoch >= 0:
            ctx.cg_heartbeat(mid, -1, instance=static)
        elif op == "away" and member is not None and static is not None and member.epoch >= 0:
            ctx.cg_heartbeat(mid, -2, instance=static)
        elif op in ("wait", "long"):
            ctx.advance(20_000 if op == "wait" else 50_000)     # session 45 s
        elif op == "grow":
            partitions += 1
            ctx.set_topics(t=partitions)
    completed = [e.generation for e in ctx.events if e.kind is K.REBALANCE_COMPLETED]
    assert completed == sorted(completed)


CLASSIC_OPS = st.lists(st.tuples(st.sampled_from(["join", "static", "rejoin", "sync", "beat", "leave", "wait", "long"]),
                                 st.integers(0, 3)), min_size=1, max_size=40)


@given(CLASSIC_OPS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_classic_rebalances_complete_once_per_generation_under_random_churn(ops):
    ctx = EventContext(GroupConfig(initial_rebalance_delay_ms=0))
    members: dict[int, str] = {}
    for op, i in ops:
        group = ctx.coord.groups.get("g")
        live = dict(group.members) if group is not None else {}
        mid = members.get(i)
        if op in ("join", "static") and mid not in live:
            instance = f"i-{i}" if op == "static" else None
            ctx.join("g", instance=instance, version=3)        # parked until the join phase ends
            now = ctx.coord.groups["g"].members
            added = [m for m in now if m not in live]
            if added:
                members[i] = added[-1]
        elif op == "rejoin" and mid in live:
            ctx.join("g", mid, instance=live[mid].group_instance_id, version=3)
        elif op == "sync" and group is not None and group.state.value == "CompletingRebalance":
            # The leader assigns one partition each (a different split every generation).
            plan = {m: assignment(("t", (k + group.generation) % 5)) for k, m in enumerate(live)}
            order = [group.leader] + [m for m in live if m != group.leader]
            for m in order:
                ctx.sync("g", m, group.generation, plan if m == group.leader else None,
                         instance=live[m].group_instance_id)
        elif op == "beat" and group is not None:
            for m, member in live.items():
                ctx.heartbeat("g", m, group.generation, instance=member.group_instance_id)
        elif op == "leave" and mid in live:
            ctx.leave("g", LeavingMember(mid, live[mid].group_instance_id))
        elif op in ("wait", "long"):
            ctx.advance(4_000 if op == "wait" else 11_000)     # session 10 s
        ctx.advance(1)                                         # the join phase may end now
    completed = [e.generation for e in ctx.events if e.kind is K.REBALANCE_COMPLETED]
    assert completed == sorted(set(completed))
