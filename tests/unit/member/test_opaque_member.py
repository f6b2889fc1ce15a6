"""The classic member in a group of another protocol type: opaque metadata, the leader's
assignment computed by the driver, one opaque assignment held, eager or cooperative, and
the assignment let go before the coordinator could expire the member."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    AssignmentsComputed,
    ClassicMemberMachine,
    Close,
    CoordinatorFound,
    CoordinatorLost,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MemberConfig,
    Rejoin,
    RequestFailed,
    RunAssign,
    RunOpaqueAssigned,
    RunOpaqueLost,
    RunOpaqueRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SetProtocols,
    Subscribe,
    SyncGroupAnswered,
    Tick,
)

PROTOCOLS = (("v1", b"meta"),)


def kinds(actions):
    return [type(a).__name__ for a in actions]


class Ctx:
    """A manual clock and a scripted coordinator for one opaque member."""

    def __init__(self, **config) -> None:
        config.setdefault("group_id", "g")
        config.setdefault("protocol_type", "jobs")
        config.setdefault("session_timeout_ms", 10_000)
        config.setdefault("heartbeat_interval_ms", 1_000)
        config.setdefault("max_poll_interval_ms", 30_000)
        config.setdefault("lose_before_expiry", True)
        self.now = 0
        self.member = ClassicMemberMachine(MemberConfig(**config), now_ms=0)
        self.log: list = []

    def send(self, event):
        out = self.member.handle(event)
        self.log.extend(out)
        return out

    def last(self, kind):
        return [a for a in self.log if isinstance(a, kind)][-1]

    def advance(self, ms):
        self.now += ms
        return self.send(Tick(self.now))

    def start(self, protocols=PROTOCOLS):
        out = self.send(SetProtocols(protocols, self.now))
        return out + self.send(CoordinatorFound(self.now))

    def join_ok(self, generation=1, leader="other", member_id="me", members=()):
        req = self.last(SendJoinGroup)
        return self.send(JoinGroupAnswered(req.request_id, E.NONE, self.now, generation, "v1",
                                           leader, member_id, tuple(members)))

    def sync_ok(self, assignment=b"A"):
        return self.send(SyncGroupAnswered(self.last(SendSyncGroup).request_id, E.NONE, self.now,
                                           assignment))

    def heartbeat(self, error=E.NONE):
        return self.send(HeartbeatAnswered(self.last(SendHeartbeat).request_id, error, self.now))

    def stable(self, assignment=b"A", generation=1):
        self.start()
        self.join_ok(generation)
        return self.sync_ok(assignment)


def test_joins_with_the_offered_protocols_and_protocol_type():
    ctx = Ctx()
    out = ctx.start()
    assert kinds(out) == ["FindCoordinator", "SendJoinGroup"]
    join = out[1]
    assert join.protocol_type == "jobs" and join.protocols == PROTOCOLS
    assert join.rebalance_timeout_ms == 30_000 and join.session_timeout_ms == 10_000


def test_follower_syncs_empty_and_gets_the_assignment_bytes_whole():
    ctx = Ctx()
    ctx.start()
    out = ctx.join_ok(generation=4, leader="L")
    assert kinds(out) == ["SendSyncGroup"] and out[0].assignments == ()
    assert out[0].protocol_type == "jobs" and out[0].protocol == "v1"
    out = ctx.sync_ok(b"\x00\x01xyz")
    assert out == [RunOpaqueAssigned(b"\x00\x01xyz", 4, "L", "me")]
    assert ctx.member.assignment == b"\x00\x01xyz" and ctx.member.state.name == "STABLE"


def test_empty_assignment_bytes_are_an_assignment_too():
    ctx = Ctx()
    assert kinds(ctx.stable(b"")) == ["RunOpaqueAssigned"] and ctx.member.holds


def test_leader_asks_the_driver_to_assign_then_syncs_its_answer():
    ctx = Ctx()
    ctx.start()
    members = (JoinedMember("me", None, b"m1"), JoinedMember("you", "i2", b"m2"))
    out = ctx.join_ok(generation=2, leader="me", members=members)
    assert kinds(out) == ["RunAssign"] and ctx.member.state.name == "SYNCING"
    run = out[0]
    assert run.members == members and run.generation == 2 and run.protocol == "v1"
    assert ctx.send(AssignmentsComputed(run.request_id + 99, (("me", b"x"),), ctx.now)) == []
    out = ctx.send(AssignmentsComputed(run.request_id, (("me", b"x"), ("you", b"y")), ctx.now))
    assert kinds(out) == ["SendSyncGroup"]
    assert out[0].assignments == (("me", b"x"), ("you", b"y")) and out[0].generation == 2


def test_a_failing_assign_leaves_the_group_and_is_fatal():
    ctx = Ctx()
    ctx.start()
    run = ctx.join_ok(leader="me")[0]
    out = ctx.send(AssignmentsComputed(run.request_id, (), ctx.now, error="boom"))
    assert kinds(out) == ["SendLeaveGroup", "Fatal"] and "boom" in out[1].message
    assert ctx.member.state.name == "FATAL"


def test_coordinator_lost_while_assigning_drops_the_round():
    ctx = Ctx()
    ctx.start()
    run = ctx.join_ok(leader="me")[0]
    ctx.send(CoordinatorLost(ctx.now))
    assert ctx.member.state.name == "JOINING"
    assert ctx.send(AssignmentsComputed(run.request_id, (("me", b"x"),), ctx.now)) == []


def test_eager_revokes_before_it_rejoins():
    # The order matters for leader election: the old leader gives up before its JoinGroup
    # can let the coordinator complete the next generation.
    ctx = Ctx()
    ctx.stable()
    ctx.advance(1_000)
    out = ctx.heartbeat(E.REBALANCE_IN_PROGRESS)
    assert kinds(out) == ["RunOpaqueRevoked", "SendJoinGroup"] and ctx.member.assignment is None


def test_cooperative_keeps_the_assignment_through_the_rebalance():
    ctx = Ctx(rebalance="cooperative")
    ctx.stable(b"A")
    ctx.advance(1_000)
    assert kinds(ctx.heartbeat(E.REBALANCE_IN_PROGRESS)) == ["SendJoinGroup"]
    assert ctx.member.assignment == b"A"
    ctx.join_ok(generation=2)
    assert ctx.sync_ok(b"B") == [RunOpaqueAssigned(b"B", 2, "other", "me")]


def test_illegal_generation_loses_the_assignment():
    ctx = Ctx(rebalance="cooperative")
    ctx.stable()
    ctx.advance(1_000)
    out = ctx.heartbeat(E.ILLEGAL_GENERATION)
    assert kinds(out) == ["RunOpaqueLost", "SendJoinGroup"] and out[1].member_id == "me"


def test_new_protocols_go_with_the_next_join_without_a_rebalance():
    ctx = Ctx()
    ctx.stable()
    assert ctx.send(SetProtocols((("v1", b"new"),), ctx.now)) == []
    assert ctx.member.state.name == "STABLE"
    out = ctx.send(Rejoin("tasks changed", ctx.now))
    assert kinds(out) == ["RunOpaqueRevoked", "SendJoinGroup"]
    assert out[1].protocols == (("v1", b"new"),) and out[1].reason == "tasks changed"


def test_rejoin_during_a_round_runs_one_more_round_after_it():
    ctx = Ctx(rebalance="cooperative")
    ctx.start()
    assert ctx.send(Rejoin("again", ctx.now)) == []
    ctx.join_ok()
    out = ctx.sync_ok(b"A")
    assert kinds(out) == ["RunOpaqueAssigned", "SendJoinGroup"] and out[1].reason == "again"


def test_close_revokes_and_leaves_but_a_static_member_does_not_leave():
    ctx = Ctx()
    ctx.stable()
    out = ctx.send(Close(ctx.now))
    assert kinds(out) == ["RunOpaqueRevoked", "SendLeaveGroup"]
    assert out[1].reason == "the member is being closed"
    ctx = Ctx(group_instance_id="i1")
    ctx.stable()
    assert kinds(ctx.send(Close(ctx.now))) == ["RunOpaqueRevoked"]


def test_empty_protocols_leave_the_group():
    ctx = Ctx()
    ctx.stable()
    out = ctx.send(SetProtocols((), ctx.now))
    assert kinds(out) == ["RunOpaqueRevoked", "SendLeaveGroup"]
    assert ctx.member.state.name == "UNJOINED"


def test_consumer_events_are_ignored_by_an_opaque_member():
    ctx = Ctx()
    assert ctx.send(Subscribe(("t",), ctx.now)) == [] and ctx.member.state.name == "UNJOINED"


def test_no_poll_timeout_for_an_opaque_member():
    ctx = Ctx()
    ctx.stable()
    for _ in range(100):              # 100 s, four times max.poll.interval.ms
        ctx.advance(1_000)
        assert ctx.heartbeat() == []
    assert ctx.member.assignment == b"A"


# -- letting go before the coordinator can expire the member -----------------------------


def test_silent_coordinator_loses_the_assignment_a_margin_before_expiry():
    ctx = Ctx()
    ctx.stable()                      # SyncGroup sent at 0
    ctx.advance(1_000)
    ctx.heartbeat()                   # answered: sent at 1_000
    ctx.advance(1_000)                # sent at 2_000, never answered
    # The coordinator cannot expire it before 1_000 + 10_000; it lets go at 10_000.
    assert ctx.member.next_deadline() == 10_000
    assert ctx.advance(7_999) == []
    out = ctx.advance(1)
    assert kinds(out) == ["RunOpaqueLost", "SendJoinGroup"]
    assert ctx.member.generation == -1 and out[1].member_id == "me"


def test_the_count_pauses_while_a_join_is_in_flight_and_resumes_when_it_fails():
    ctx = Ctx(rebalance="cooperative")
    ctx.stable()
    ctx.advance(1_000)
    ctx.heartbeat(E.REBALANCE_IN_PROGRESS)         # JoinGroup sent at 1_000
    assert ctx.advance(20_000) == []               # parked at the coordinator: still a member
    assert ctx.member.assignment == b"A"
    out = ctx.send(RequestFailed(ctx.last(SendJoinGroup).request_id, ctx.now))
    assert kinds(out) == ["FindCoordinator", "RunOpaqueLost"]


def test_a_consumer_keeps_its_partitions_without_lose_before_expiry():
    m = ClassicMemberMachine(MemberConfig(group_id="g", session_timeout_ms=10_000,
                                          heartbeat_interval_ms=1_000))
    assert not m.config.lose_before_expiry


ERRORS = [E.NONE, E.NONE, E.NONE, E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION,
          E.UNKNOWN_MEMBER_ID, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS]

step = st.one_of(
    st.tuples(st.just("advance"), st.integers(0, 12_000)),
    st.tuples(st.just("join"), st.sampled_from(ERRORS), st.booleans()),
    st.tuples(st.just("assigned"), st.booleans()),
    st.tuples(st.just("sync"), st.sampled_from(ERRORS)),
    st.tuples(st.just("heartbeat"), st.sampled_from(ERRORS)),
    st.tuples(st.just("found"), st.just(0)),
    st.tuples(st.just("lost"), st.just(0)),
    st.tuples(st.just("failed"), st.just(0)),
    st.tuples(st.just("rejoin"), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(cooperative=st.booleans(), steps=st.lists(step, min_size=3, max_size=60))
def test_an_assignment_is_never_held_past_what_the_coordinator_allows(cooperative, steps):
    """Whatever the answers and delays: callbacks alternate (assigned, then revoked or lost;
    cooperatively, a new assignment may also replace the one held);
    an eager member holds nothing outside STABLE; and the member never holds an assignment
    at a time the coordinator could already have expired it: session timeout after the send
    of the last request it answered without error, unless a join or sync is in flight."""
    ctx = Ctx(rebalance="cooperative" if cooperative else None)
    holding = False
    alive = None
    sent: dict[int, int] = {}
    in_flight: set[int] = set()

    def apply(event):
        nonlocal holding, alive
        if isinstance(event, (JoinGroupAnswered, SyncGroupAnswered, HeartbeatAnswered)):
            in_flight.discard(event.request_id)
            if event.error is E.NONE and event.request_id in sent:
                alive = max(alive or 0, sent[event.request_id])
        for a in ctx.send(event):
            if isinstance(a, (SendJoinGroup, SendSyncGroup, SendHeartbeat)):
                sent[a.request_id] = ctx.now
                if not isinstance(a, SendHeartbeat):
                    in_flight.add(a.request_id)
            elif isinstance(a, RunOpaqueAssigned):
                # Eager: assigned, then revoked or lost, in turn. Cooperative: a member keeps
                # what it holds while it rejoins, and the next generation's assignment
                # replaces it whole (the member decides what to give up, as in Connect's
                # incremental protocol; classic_member.py's module comment).
                assert cooperative or not holding
                holding = True
            elif isinstance(a, (RunOpaqueRevoked, RunOpaqueLost)):
                assert holding
                holding = False
        assert holding == (ctx.member.assignment is not None)
        if not cooperative and ctx.member.state.name != "STABLE":
            assert not holding
        # A join or sync the member still waits for keeps it in the group at the coordinator.
        waiting = ctx.member._waiting
        if holding and not (waiting and waiting[0] in ("join", "sync") and waiting[1] in in_flight):
            assert ctx.now < alive + 10_000, "held past the coordinator's deadline"

    apply(SetProtocols(PROTOCOLS, 0))
    apply(CoordinatorFound(0))
    gen = 0
    for s in [("join", E.NONE, False), ("sync", E.NONE)] + steps:  # from a stable member
        kind = s[0]
        if kind == "advance":
            ctx.now += s[1]
            apply(Tick(ctx.now))
        elif kind == "join" and any(isinstance(a, SendJoinGroup) for a in ctx.log):
            gen += 1
            req = ctx.last(SendJoinGroup)
            apply(JoinGroupAnswered(req.request_id, s[1], ctx.now, gen, "v1",
                                    "me" if s[2] else "other", "me",
                                    (JoinedMember("me", None, b""),)))
        elif kind == "assigned" and any(isinstance(a, RunAssign) for a in ctx.log):
            apply(AssignmentsComputed(ctx.last(RunAssign).request_id, (("me", b"x"),), ctx.now,
                                      None if s[1] else "boom"))
        elif kind == "sync" and any(isinstance(a, SendSyncGroup) for a in ctx.log):
            apply(SyncGroupAnswered(ctx.last(SendSyncGroup).request_id, s[1], ctx.now, b"x"))
        elif kind == "heartbeat" and any(isinstance(a, SendHeartbeat) for a in ctx.log):
            apply(HeartbeatAnswered(ctx.last(SendHeartbeat).request_id, s[1], ctx.now))
        elif kind == "found":
            apply(CoordinatorFound(ctx.now))
        elif kind == "lost":
            apply(CoordinatorLost(ctx.now))
        elif kind == "failed" and sent:
            in_flight.discard(max(sent))
            apply(RequestFailed(max(sent), ctx.now))
        elif kind == "rejoin":
            apply(Rejoin("again", ctx.now))
        if ctx.member.state.name in ("FATAL", "LEFT"):
            break
    apply(Close(ctx.now))
    assert not holding


def test_metadata_for_is_asked_at_each_join_with_what_is_held():
    seen = []

    def metadata_for(held, previous, generation):
        seen.append((held, previous, generation))
        return (("v1", b"%s/%d" % (held or b"-", generation)),)

    ctx = Ctx(rebalance="cooperative", metadata_for=metadata_for)
    ctx.start()
    ctx.join_ok(generation=3)
    ctx.sync_ok(b"T1")
    out = ctx.send(Rejoin("more", ctx.now))
    assert out[0].protocols == (("v1", b"T1/3"),)
    assert seen == [(None, None, -1), (b"T1", b"T1", 3)]
    ctx.advance(1_000)
    ctx.send(CoordinatorLost(ctx.now))
    ctx.advance(20_000)                             # lost as the join failed
    ctx.send(CoordinatorFound(ctx.now))
    assert seen[-1] == (None, b"T1", 3)
