"""KIP-1263: the assignment interval batches target assignments (Kafka 4.3+).

The group epoch moves at once on every change; the target assignment is computed only when
none was since the group started or last emptied, or once `<kind>.assignment.interval.ms`
(group config over `group.<kind>.assignment.interval.ms`, Kafka's default 1 s) has passed
since the last one. In between a member walks towards the last target: a member joining
then starts empty, at that target's epoch. All on the manual clock of GroupContext, with
the intervals in force (`assign_at_once=False`).
"""

from __future__ import annotations

from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import GroupState
from kgroup.core.errors import ErrorCode as E
from kgroup.core.group_configs import AlterGroupConfigsRequest, ConfigOp, ConfigSource
from kgroup.core.modern_protocol import may_assign
from kgroup.core.record_codec import decode, encode
from kgroup.core.records import ConsumerTargetEpochRecord, ShareTargetEpochRecord
from kgroup.core.share_messages import ShareGroupHeartbeatRequest

from tests.unit.core.groupctx import GroupContext, Pending

CONSUMER = "consumer.assignment.interval.ms"
SHARE = "share.assignment.interval.ms"
SET = ConfigOp.SET


def batching(config: GroupConfig | None = None) -> GroupContext:
    ctx = GroupContext(config or GroupConfig(), assign_at_once=False)
    ctx.set_topics(t=4)
    ctx.now = 10_000
    return ctx


def alter(ctx: GroupContext, group: str, *changes) -> Pending:
    return ctx.call(ctx.coord.alter_group_configs, AlterGroupConfigsRequest(group, tuple(changes)))


def held(ctx: GroupContext, member: str) -> int:
    return sum(len(ps) for _, ps in ctx.cgroup().members[member].current.assigned)


def heartbeat(ctx: GroupContext, member: str):
    m = ctx.cgroup().members[member]
    return ctx.cg_heartbeat(member, m.epoch, owned=m.current.assigned).response


def target_epochs(ctx: GroupContext, kind=ConsumerTargetEpochRecord) -> list[int]:
    return [r.epoch for r in ctx.log if type(r) is kind and r.epoch is not None]


def test_kip1263_the_configs_have_kafkas_names_defaults_and_bounds():
    ctx = batching()
    d = {c.name: c for c in ctx.call(ctx.coord.describe_group_configs, "cg").response}
    for name, kind in ((CONSUMER, "consumer"), (SHARE, "share")):
        assert (d[name].value, d[name].source, d[name].type_name) == ("1000", ConfigSource.DEFAULT_CONFIG, "INT")
        assert d[name].synonyms == ((f"group.{kind}.assignment.interval.ms", "1000", ConfigSource.DEFAULT_CONFIG),)
        assert alter(ctx, "cg", (name, SET, "15001")).raised == E.INVALID_CONFIG   # group.<kind>.max: 15 s
        assert alter(ctx, "cg", (name, SET, "-1")).raised == E.INVALID_CONFIG      # group.<kind>.min: 0
        assert alter(ctx, "cg", (name, SET, "soon")).raised == E.INVALID_CONFIG
        assert alter(ctx, "cg", (name, SET, "0")).raised is None
        assert alter(ctx, "cg", (name, SET, "15000")).raised is None


def test_kip1263_a_new_group_assigns_its_first_member_at_once():
    # The epoch-1 start: a new group's target is the empty one of epoch 1 with no
    # assignment time, so the first join is assigned in its own heartbeat.
    ctx = batching()
    r = ctx.cg_heartbeat("a", 0, topics=["t"]).response
    assert (r.member_epoch, ctx.cgroup().epoch, ctx.cgroup().target_epoch) == (2, 2, 2)
    assert sum(len(ps) for _, ps in r.assignment) == 4


def test_kip1263_a_join_within_the_interval_moves_the_group_epoch_but_not_the_target():
    ctx = batching()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.advance(100)
    r = ctx.cg_heartbeat("b", 0, topics=["t"]).response
    group = ctx.cgroup()
    # The group epoch moved; the target did not: b starts empty at the last target's epoch.
    assert (group.epoch, group.target_epoch) == (3, 2)
    assert (r.member_epoch, r.assignment) == (2, ())
    assert group.state() is GroupState.ASSIGNING
    ctx.advance(800)                                   # 900 ms after the last assignment
    heartbeat(ctx, "a")
    assert ctx.cgroup().target_epoch == 2 and held(ctx, "a") == 4
    ctx.advance(100)                                   # the interval has passed
    heartbeat(ctx, "a")
    assert ctx.cgroup().target_epoch == 3
    for _ in range(3):
        for m in ("a", "b"):
            heartbeat(ctx, m)
    assert (held(ctx, "a"), held(ctx, "b")) == (2, 2)
    assert ctx.cgroup().state() is GroupState.STABLE


def test_kip1263_many_changes_within_one_interval_make_one_assignment():
    ctx = batching()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    for m in "bcd":
        ctx.advance(100)
        ctx.cg_heartbeat(m, 0, topics=["t"])
    assert ctx.cgroup().epoch == 5 and target_epochs(ctx) == [2]
    ctx.advance(1_000)
    heartbeat(ctx, "c")
    # One computation for the three joins, stamped with the epoch the group had reached.
    assert target_epochs(ctx) == [2, 5]
    assert ConsumerTargetEpochRecord("cg", 5, ctx.now) in ctx.log


def test_kip1263_a_group_that_empties_assigns_its_next_member_at_once():
    ctx = batching()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.advance(100)
    ctx.cg_heartbeat("a", -1)
    assert ctx.cgroup().target_timestamp == 0          # emptied: no assignment time
    ctx.advance(100)
    r = ctx.cg_heartbeat("b", 0, topics=["t"]).response
    assert r.member_epoch == ctx.cgroup().epoch == ctx.cgroup().target_epoch
    assert sum(len(ps) for _, ps in r.assignment) == 4


def test_kip1263_the_group_config_overrides_the_broker_setting():
    ctx = batching(GroupConfig(consumer_assignment_interval_ms=0))
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.cg_heartbeat("b", 0, topics=["t"])
    assert ctx.cgroup().target_epoch == ctx.cgroup().epoch           # 0: at every change
    assert alter(ctx, "cg", (CONSUMER, SET, "5000")).raised is None
    ctx.advance(10)
    ctx.cg_heartbeat("c", 0, topics=["t"])                           # first stamped assignment
    ctx.advance(10)
    ctx.cg_heartbeat("d", 0, topics=["t"])
    assert ctx.cgroup().target_epoch == ctx.cgroup().epoch - 1
    ctx.advance(4_900)
    heartbeat(ctx, "a")
    assert ctx.cgroup().target_epoch == ctx.cgroup().epoch - 1
    ctx.advance(100)
    heartbeat(ctx, "a")
    assert ctx.cgroup().target_epoch == ctx.cgroup().epoch


def share_hb(ctx: GroupContext, member: str, epoch: int, topics=None):
    return ctx.call(ctx.coord.share_group_heartbeat,
                    ShareGroupHeartbeatRequest("sg", member, epoch, subscribed_topic_names=topics)).response


def test_kip1263_share_groups_batch_their_assignments_too():
    ctx = batching(GroupConfig(share_session_timeout_ms=10_000, share_heartbeat_interval_ms=1_000))
    a = share_hb(ctx, "a", 0, ["t"])
    assert a.member_epoch == 2                          # assigned at once (its partitions
    ctx.advance(10)                                     # count once initialized)
    b = share_hb(ctx, "b", 0, ["t"])
    group = ctx.coord.share_groups["sg"]
    assert group.epoch > group.target_epoch == 2 and (b.member_epoch, b.assignment) == (2, ())
    ctx.advance(1_000)
    a = share_hb(ctx, "a", a.member_epoch)
    b = share_hb(ctx, "b", b.member_epoch)
    assert group.target_epoch == group.epoch == b.member_epoch and b.assignment
    assert target_epochs(ctx, ShareTargetEpochRecord) == [2, group.epoch]


def test_kip1263_the_assignment_time_is_durable():
    ctx = batching()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    stamp = ctx.cgroup().target_timestamp
    assert stamp == ctx.now
    record = next(r for r in ctx.log if type(r) is ConsumerTargetEpochRecord)
    assert decode(encode(record)) == record == ConsumerTargetEpochRecord("cg", 2, stamp)
    # A target epoch without a time (the group emptied, or written before KIP-1263) reads
    # as it was written.
    for bare in (ConsumerTargetEpochRecord("cg", 3), ShareTargetEpochRecord("sg", 4)):
        assert decode(encode(bare)) == bare
    # The group's snapshot keeps it.
    assert ConsumerTargetEpochRecord("cg", 2, stamp) in ctx.cgroup().snapshot()


def test_kip1263_may_assign_is_kafkas_rule():
    assert may_assign(0, 1_000, 5)                       # never assigned: at once
    assert may_assign(500, 0, 501)                       # no interval
    assert not may_assign(500, 1_000, 1_499)
    assert may_assign(500, 1_000, 1_500)
