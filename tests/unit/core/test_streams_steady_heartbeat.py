"""A settled member's streams-group heartbeat is answered without the heartbeat's steps
(`StreamsProtocol.steady`, KIP-1071): the answer, the records (none) and every change to the
shard must be exactly what the steps give.

The property drives random interleavings of streams-group heartbeats (joins, static joins,
steady beats, beats that report the tasks held, task offsets, the rack, another client id,
an old endpoint epoch, stale and future epochs, a shutdown request, leaves, unknown
members), timer expiry (sessions, revocation), topic changes (the source topic grows, the
internal topics come and go) and group config changes on two coordinators side by side
(tests/unit/core/steady_twins.py): one as shipped, one with the steady path switched off.
After every operation both have written the same records, given the same answers and
errors, and hold the same groups, stored state and timers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.config import GroupConfig
from kgroup.core.errors import ErrorCode
from kgroup.core.group_configs import AlterGroupConfigsRequest, ConfigOp
from kgroup.core.streams_messages import StreamsGroupHeartbeatRequest
from kgroup.core.streams_protocol import StreamsProtocol
from kgroup.core.timers import streams_session_key
from tests.unit.core.groupctx import Pending
from tests.unit.core.steady_twins import Recording, Twins
from tests.unit.core.test_streams_scenarios import CHANGELOG, REPARTITION, TOPOLOGY

G = "app"
MEMBERS = 4
SESSION = 10_000
CONFIG = GroupConfig(streams_session_timeout_ms=SESSION, streams_heartbeat_interval_ms=1_000,
                     streams_initial_rebalance_delay_ms=500)

who = st.integers(0, MEMBERS - 1)
operations = st.one_of(
    st.tuples(st.just("join"), who),
    st.tuples(st.just("beat"), who, st.sampled_from(["good", "good", "good", "report", "offsets", "rack",
                                                     "client", "endpoint", "stale", "ahead", "shutdown"])),
    st.tuples(st.just("all")),
    st.tuples(st.just("leave"), who),
    st.tuples(st.just("unknown"), who),
    st.tuples(st.just("advance"), st.sampled_from([0, 1_000, 4_000, 11_000, 31_000])),
    st.tuples(st.just("topics"), st.sampled_from([4, 6]), st.booleans()),
    st.tuples(st.just("config"), st.sampled_from(["0", "1"])),
)
bootstrap = st.lists(st.tuples(st.just("join"), who), min_size=1, max_size=4).map(
    lambda joins: [("topics", 4, True)] + joins + [("advance", 1_000), ("all",), ("all",), ("all",)])
scenarios = st.tuples(bootstrap, st.lists(operations, min_size=3, max_size=40)).map(lambda p: p[0] + p[1])


def member_id(i: int) -> str:
    return f"streams-member-{i}"


@dataclass
class StreamsRun:
    ctx: Recording = field(default_factory=lambda: Recording(CONFIG))
    endpoint_epochs: dict[int, int] = field(default_factory=dict)

    def heartbeat(self, i: int, epoch: int, **fields) -> Pending:
        ctx = self.ctx
        static = f"instance-{i}" if i == MEMBERS - 1 else None
        if epoch == 0:
            fields = dict(topology=TOPOLOGY, rebalance_timeout_ms=30_000, active_tasks=(), standby_tasks=(),
                          warmup_tasks=(), process_id=f"process-{i % 2}", user_endpoint=(f"host-{i}", 9000 + i),
                          **fields)
        pending = ctx.call(ctx.coord.streams_group_heartbeat, StreamsGroupHeartbeatRequest(
            G, member_id(i), epoch, instance_id=static, client_id=fields.pop("client_id", "client"),
            client_host="/127.0.0.1", endpoint_information_epoch=self.endpoint_epochs.get(i, 0), **fields))
        if pending.response is not None:
            self.endpoint_epochs[i] = pending.response.endpoint_information_epoch
        return pending

    def member(self, i: int):
        group = self.ctx.coord.streams_groups.get(G)
        return group.members.get(member_id(i)) if group is not None else None

    def beat(self, i: int, how: str) -> None:
        m = self.member(i)
        if m is None:
            return
        epoch, fields = m.epoch, {}
        if how == "report":
            held = m.current.assigned()
            fields = dict(active_tasks=held.active, standby_tasks=held.standby, warmup_tasks=held.warmup)
        elif how == "offsets":
            fields = dict(task_offsets=(("1", 0, 5),), task_end_offsets=(("1", 0, 9),))
        elif how == "rack":
            fields = dict(rack_id="rack-a")
        elif how == "client":
            fields = dict(client_id="another-client")
        elif how == "endpoint":
            self.endpoint_epochs[i] = self.endpoint_epochs.get(i, 0) - 1
        elif how == "stale":
            epoch -= 1
        elif how == "ahead":
            epoch += 1
        elif how == "shutdown":
            fields = dict(shutdown_application=True)
        self.heartbeat(i, epoch, **fields)


def step(run: StreamsRun, op: tuple) -> None:
    kind, ctx = op[0], run.ctx
    if kind == "join":
        run.heartbeat(op[1], 0)
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
        _, partitions, internal = op
        topics = {"input": partitions} | ({REPARTITION: 4, CHANGELOG: 4} if internal else {})
        ctx.set_topics(**topics)
    elif kind == "config":
        ctx.call(ctx.coord.alter_group_configs, AlterGroupConfigsRequest(
            G, (("streams.num.standby.replicas", ConfigOp.SET, op[1]),)))
    else:  # pragma: no cover
        raise AssertionError(op)


def twins() -> Twins:
    return Twins(StreamsProtocol, "streams_groups", StreamsRun(), StreamsRun(), step)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios)
def test_the_streams_steady_path_answers_exactly_as_the_heartbeat_steps_over_random_interleavings(ops):
    twins().play(ops)


def test_the_streams_twins_reach_the_steady_path_and_agree():
    pair = twins().play([("topics", 4, True), ("join", 0), ("join", 1), ("advance", 1_000), ("all",), ("all",),
                         ("all",), ("beat", 0, "report"), ("beat", 1, "rack"), ("config", "1"), ("all",), ("all",),
                         ("all",)])
    assert pair.answered["answered"] >= 4 and pair.answered["stepped"] >= 4, pair.answered


def test_a_settled_streams_members_heartbeat_skips_the_steps_writes_nothing_and_moves_its_session_on():
    run = StreamsRun()
    for op in [("topics", 4, True), ("join", 0), ("join", 1), ("advance", 1_000), ("all",), ("all",), ("all",)]:
        step(run, op)
    ctx, m = run.ctx, run.member(0)
    assert m.current.assigned().active and m.epoch == ctx.coord.streams_groups[G].target_epoch
    logged, calls = len(ctx.log), []
    original = StreamsProtocol._heartbeat

    def counting(self, *args, **kwargs):
        calls.append(args)
        return original(self, *args, **kwargs)

    ctx.now += 3_000
    with patch.object(StreamsProtocol, "_heartbeat", counting):
        pending = run.heartbeat(0, m.epoch)
        assert not calls
        assert pending.raised is None and pending.response.error_code is ErrorCode.NONE
        assert pending.response.active_tasks is None
        assert pending.response.member_epoch == m.epoch and pending.response.status == ()
        assert pending.response.heartbeat_interval_ms == CONFIG.streams_heartbeat_interval_ms
        assert len(ctx.log) == logged
        deadline = ctx.coord.shard.timers._current[streams_session_key(G, member_id(0))][0]
        assert deadline == ctx.now + SESSION
        # Reporting the tasks held takes the steps (they find nothing changed).
        held = m.current.assigned()
        run.heartbeat(0, m.epoch, active_tasks=held.active, standby_tasks=held.standby, warmup_tasks=held.warmup)
        assert len(calls) == 1 and len(ctx.log) == logged
