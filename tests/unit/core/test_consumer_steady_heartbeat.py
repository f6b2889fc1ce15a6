"""A settled member's consumer heartbeat is answered without the heartbeat's steps
(`ConsumerProtocol.steady`): the answer, the records (none) and every change to the shard
must be exactly what the steps give.

The property runs the consumer-protocol interleavings of test_consumer_properties.py (joins,
steady and stale beats, static members, leaves, classic members migrating the group both
ways, timers, topic changes) on two coordinators side by side: one as shipped, one with the
steady path switched off. After every operation both have written the same records, given
the same answers and errors, and hold the same groups, stored state and timers.
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given

from kgroup.core.consumer_group import GroupState
from kgroup.core.consumer_protocol import ConsumerProtocol
from kgroup.core.errors import ErrorCode
from kgroup.core.timers import consumer_revoke_key, consumer_session_key
from tests.unit.core.groupctx import Pending
from tests.unit.core.steady_twins import Recording, Twins
from tests.unit.core.test_consumer_properties import CONFIG, G, PROPERTY_SETTINGS, Run, note, scenarios


def step(run: Run, op: tuple) -> None:
    run.apply(op)
    run.learn_from_replies()


class ConsumerTwins(Twins):
    """The consumer protocol's twins; also checks what the static member lookup rests on."""

    def __init__(self) -> None:
        super().__init__(ConsumerProtocol, "consumer_groups", Run(ctx=Recording(CONFIG)), Run(ctx=Recording(CONFIG)),
                         step)

    def same(self, op: tuple) -> None:
        super().same(op)
        group = self.fast.ctx.coord.consumer_groups.get(G)
        if group is not None:
            # No instance id is two members' (else Kafka's lookup by instance id could find
            # another member than the steady path's lookup by member id).
            ids = [m.meta.instance_id for m in group.members.values() if m.meta.instance_id is not None]
            assert len(ids) == len(set(ids)), ids


@PROPERTY_SETTINGS
@given(scenarios)
def test_the_steady_path_answers_exactly_as_the_heartbeat_steps_over_random_interleavings(ops):
    twins = ConsumerTwins()
    for op in ops:
        twins.apply(op)
        twins.fast.check()
    note(f"steady path answered: {bool(twins.answered['answered'])}")


# ---- the steady path is taken where it should be, and only there --------------------------


def settled(static: bool = False) -> tuple[Recording, list[str]]:
    """Three members of G on topic t (6 partitions), settled: STABLE at the group's epoch."""
    ctx = Recording(CONFIG)
    ctx.set_topics(t=6)
    ids = [f"m{i}" for i in range(3)]
    for i, mid in enumerate(ids):
        ctx.cg_heartbeat(mid, 0, group=G, topics=["t"], instance=f"inst-{i}" if static else None)
    for _ in range(3):
        for mid in ids:
            m = ctx.cgroup(G).members[mid]
            ctx.cg_heartbeat(mid, m.epoch, group=G, owned=m.current.assigned,
                             instance=m.meta.instance_id)
    assert ctx.cgroup(G).state() is GroupState.STABLE
    return ctx, ids


def steps_taken(ctx: Recording, send) -> tuple[Pending, int]:
    """Send one request, counting the heartbeats that went through the steps."""
    calls = []
    original = ConsumerProtocol.heartbeat_in

    def counting(self, *args, **kwargs):
        calls.append(args)
        return original(self, *args, **kwargs)

    with patch.object(ConsumerProtocol, "heartbeat_in", counting):
        pending = send()
    return pending, len(calls)


def test_a_settled_members_heartbeat_skips_the_steps_writes_nothing_and_moves_its_session_on():
    ctx, ids = settled()
    group = ctx.cgroup(G)
    m = group.members["m1"]
    logged = len(ctx.log)
    ctx.now += 7_000
    pending, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat("m1", m.epoch, group=G))
    assert steps == 0
    assert pending.error is ErrorCode.NONE and pending.response.member_epoch == m.epoch
    assert pending.response.assignment is None and pending.response.member_id == "m1"
    assert pending.response.heartbeat_interval_ms == CONFIG.consumer_heartbeat_interval_ms
    assert len(ctx.log) == logged
    deadline = ctx.coord.shard.timers._current[consumer_session_key(G, "m1")][0]
    assert deadline == ctx.now + CONFIG.consumer_session_timeout_ms


def test_a_static_member_naming_its_own_instance_takes_the_steady_path_and_another_instance_does_not():
    ctx, ids = settled(static=True)
    m = ctx.cgroup(G).members["m0"]
    pending, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat("m0", m.epoch, group=G, instance="inst-0"))
    assert steps == 0 and pending.error is ErrorCode.NONE
    # m0 naming m1's instance is fenced, by the steps, as Kafka fences it.
    pending, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat("m0", m.epoch, group=G, instance="inst-1"))
    assert steps == 1 and pending.error is ErrorCode.FENCED_INSTANCE_ID


def test_heartbeats_that_may_change_something_take_the_steps():
    ctx, ids = settled()
    m = ctx.cgroup(G).members["m2"]
    epoch = m.epoch
    for how, send in [
        ("asked in full", lambda: ctx.cg_heartbeat("m2", epoch, group=G, topics=["t"], owned=m.current.assigned,
                                                   rebalance=60_000)),
        ("a new subscription", lambda: ctx.cg_heartbeat("m2", epoch, group=G, topics=["t", "u"])),
        ("a server assignor", lambda: ctx.cg_heartbeat("m2", epoch, group=G, assignor="range")),
        ("a previous epoch", lambda: ctx.cg_heartbeat("m2", epoch - 1, group=G, owned=m.current.assigned)),
        ("an epoch ahead", lambda: ctx.cg_heartbeat("m2", epoch + 1, group=G)),
        ("an unknown member", lambda: ctx.cg_heartbeat("nobody", epoch, group=G)),
    ]:
        _, steps = steps_taken(ctx, send)
        assert steps == 1, how
        m = ctx.cgroup(G).members["m2"]
        epoch = m.epoch


def test_a_group_whose_epoch_moved_takes_the_steps_until_the_member_is_settled_again():
    ctx, ids = settled()
    ctx.set_topics(t=9)                              # the group epoch moves: a new target is due
    group = ctx.cgroup(G)
    assert group.epoch > group.target_epoch
    m = group.members["m0"]
    pending, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat("m0", m.epoch, group=G, owned=m.current.assigned))
    assert steps == 1 and pending.response.assignment is not None
    # A member owing a revocation is UNREVOKED with its timer armed: the steps, every time.
    group = ctx.cgroup(G)
    owing = [mid for mid, mm in group.members.items() if consumer_revoke_key(G, mid) in ctx.coord.shard.timers]
    for mid in owing:
        mm = group.members[mid]
        _, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat(mid, mm.epoch, group=G))
        assert steps == 1, mid


def test_the_twins_reach_the_steady_path_and_agree():
    twins = ConsumerTwins()
    ops = [("cg_join", 0, None, ("t",), None), ("cg_join", 1, "inst-0", ("t",), None), ("advance", 1_000),
           ("cg_all",), ("cg_all",), ("cg_all",), ("cg_beat", 1, "good"), ("advance", 5_000), ("cg_all",)]
    for op in ops:
        twins.apply(op)
    assert twins.answered["answered"] >= 4 and twins.answered["stepped"] >= 4, twins.answered


def test_a_member_subscribed_by_regex_gets_the_same_answer_on_the_steady_path_as_from_the_steps():
    """The driver above joins by topic names only; a member whose subscription is a regular
    expression (resolved by a timer just after its join) is checked here, side by side."""
    contexts = [Recording(CONFIG), Recording(CONFIG)]
    for ctx, steady, steps_expected in zip(contexts, (ConsumerProtocol.steady, lambda self, *args: None), (0, 1)):
        with patch.object(ConsumerProtocol, "steady", steady):
            ctx.set_topics(t=4, u=2)
            ctx.cg_heartbeat("m0", 0, group=G, regex="t|u")
            ctx.cg_heartbeat("m1", 0, group=G, topics=["t"])
            ctx.advance(0)                                   # the regex is resolved
            for _ in range(4):
                for mid in ("m0", "m1"):
                    m = ctx.cgroup(G).members[mid]
                    ctx.cg_heartbeat(mid, m.epoch, group=G, owned=m.current.assigned)
            ctx.now += 2_000
            m0 = ctx.cgroup(G).members["m0"]
            _, steps = steps_taken(ctx, lambda: ctx.cg_heartbeat("m0", m0.epoch, group=G))
            assert steps == steps_expected
    fast, slow = contexts
    assert fast.cgroup(G).state() is GroupState.STABLE and fast.cgroup(G).members["m0"].current.assigned
    assert fast.log == slow.log
    assert [(p.response, p.raised) for p in fast.pendings] == [(p.response, p.raised) for p in slow.pendings]
    assert fast.coord.consumer_groups == slow.coord.consumer_groups
    assert dict(fast.coord.shard.timers._current) == dict(slow.coord.shard.timers._current)
