"""The core's host around a shard (core/host.py): the append, replay, deliver path the lab
and GroupContext share, and the timer loop the broker's shard runs, bounded."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from kgroup.core.classic_group import ClassicGroupState as S
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E
from kgroup.core.host import CoordinatorHost, run_due_timers
from kgroup.core.messages import JoinGroupRequest, SyncGroupRequest
from kgroup.core.records import ClassicGroupRecord
from kgroup.core.timers import TimerKind

from tests.unit.core.groupctx import GroupContext


def test_sessions_ending_together_expire_one_at_a_time_and_a_bound_leaves_the_rest():
    ctx = GroupContext()
    ctx.stable_group(3)
    ctx.now = ctx.next_deadline()                 # the three sessions end at this ms
    first = list(run_due_timers(ctx.coord, ctx.now, ctx.apply, limit=1))
    assert [op.kind for op, _ in first] == [TimerKind.CLASSIC_SESSION]
    assert len(ctx.group().members) == 2 and ctx.group().state is S.PREPARING_REBALANCE
    assert ctx.next_deadline() == ctx.now         # the other two are still due
    left = []
    for op, result in run_due_timers(ctx.coord, ctx.now, ctx.apply):
        # Yielded once applied: its records are in the log and replayed already.
        assert ctx.log[len(ctx.log) - len(result.records):] == list(result.records)
        left.append(len(ctx.group().members))
    assert left == [1, 0]
    assert ctx.group().state is S.EMPTY and isinstance(ctx.log[-1], ClassicGroupRecord)


def test_a_compacted_log_reloads_into_the_same_stored_state():
    ctx = GroupContext()
    members = ctx.stable_group(2)
    generation = ctx.group().generation
    for i in range(5):
        ctx.commit("g", members[0], generation, {("t", 0): 10 * i, ("t", 1): i})
    logged = len(ctx.log)
    stored = copy.deepcopy(ctx.coord.stored)
    ctx.compact()
    assert len(ctx.log) < logged
    ctx.reload(GroupCoordinatorShard(ctx.config))
    assert ctx.coord.stored == stored
    ctx.apply(ctx.coord.load_complete(ctx.now))
    assert ctx.group().state is S.STABLE and list(ctx.group().members) == members
    assert ctx.committed() == {("t", 0): 40, ("t", 1): 4}


class Collecting(CoordinatorHost):
    """A host whose log is a callable; it notes, as each reply goes out, what was stored."""

    def __init__(self, appended: list) -> None:
        super().__init__(GroupCoordinatorShard(), append=appended.append)
        self.replies: list = []

    def deliver(self, replies) -> None:
        stored = "g" in self.coordinator.stored.classic_groups
        self.replies += [(token, response, stored) for token, response in replies]


def test_a_host_appends_through_a_callable_and_delivers_once_replayed():
    appended: list = []
    host = Collecting(appended)
    coord = host.coordinator
    host.apply(coord.load_complete(0))
    join = JoinGroupRequest(group_id="g", member_id="", protocol_type="consumer",
                            protocols=(("range", b""),), session_timeout_ms=10_000,
                            rebalance_timeout_ms=30_000, group_instance_id=None, client_id="c",
                            client_host="/127.0.0.1", api_version=9)
    host.handle(coord.join_group, join, "join-1", 0)
    member = host.replies[-1][1].member_id
    host.handle(coord.join_group, replace(join, member_id=member), "join-2", 0)
    assert len(host.replies) == 1                 # parked for the initial rebalance delay
    assert host.expire(3_000) == 1                # the delay's end answers it
    assert host.replies[-1][0] == "join-2" and host.replies[-1][1].generation_id == 1
    host.handle(coord.sync_group, SyncGroupRequest("g", 1, member, None, "consumer", "range",
                                                   ((member, b"mine"),)), "sync", 3_000)
    token, response, stored = host.replies[-1]
    assert (token, response.error, response.assignment) == ("sync", E.NONE, b"mine")
    assert stored and [type(r) for r in appended] == [ClassicGroupRecord]


def test_a_host_takes_a_list_or_an_append_callable():
    with pytest.raises(ValueError):
        CoordinatorHost(GroupCoordinatorShard())
    with pytest.raises(ValueError):
        CoordinatorHost(GroupCoordinatorShard(), [], append=print)
