"""Online migration between classic and consumer groups (KIP-848) on the pure core."""

from __future__ import annotations

from kgroup.assignors import Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription
from kgroup.core.classic_group import ClassicGroupState as S
from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import GroupState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E

from tests.unit.core.groupctx import GroupContext, shard_view

SUB = encode_subscription(Subscription(("t",)), 0)
PROTOCOLS = (("range", SUB),)


def classic_stable_group(ctx: GroupContext) -> tuple[str, str]:
    """Two classic members on topic t (4 partitions): leader gets 0-1, follower 2-3."""
    ctx.set_topics(t=4)
    joins = [ctx.join_new("cg", protocols=PROTOCOLS), ctx.join_new("cg", protocols=PROTOCOLS)]
    ctx.run_until(lambda: all(j.done for j in joins))
    a, b = (j.response.member_id for j in joins)
    gen = joins[0].response.generation_id
    asg = {a: encode_assignment(Assignment((("t", (0, 1)),)), 0),
           b: encode_assignment(Assignment((("t", (2, 3)),)), 0)}
    ctx.sync("cg", a, gen, asg)
    ctx.sync("cg", b, gen)
    assert ctx.group("cg").state is S.STABLE
    return a, b


def partitions(sync_response) -> set[int]:
    return {p for _, ps in decode_assignment(sync_response.assignment).partitions for p in ps}


def test_consumer_member_joining_a_stable_classic_group_upgrades_it_in_place():
    ctx = GroupContext()
    a, b = classic_stable_group(ctx)
    generation = ctx.group("cg").generation
    joined = ctx.cg_heartbeat("new", 0, topics=["t"]).response
    assert joined.error is E.NONE
    assert "cg" not in ctx.coord.groups and "cg" in ctx.coord.consumer_groups
    group = ctx.cgroup()
    # The classic members came over with their partitions, at epoch = generation.
    assert group.members[a].epoch == generation and group.members[a].meta.is_classic
    assert {p for _, ps in group.members[a].current.assigned for p in ps} == {0, 1}
    assert joined.assignment == ()                       # everything is still held
    # ConsumerGroupDescribe v1 tells the two kinds of member apart (MemberType 0 / 1).
    (described,) = ctx.call(ctx.coord.consumer_group_describe, ("cg",)).response
    assert {x.member_id: x.member_type for x in described.members} == {a: 0, b: 0, "new": 1}
    # The classic members learn from Heartbeat that they must rejoin.
    assert ctx.heartbeat("cg", a, generation).error is E.REBALANCE_IN_PROGRESS
    # Each rejoins (eager: revoked everything first), syncs, and gets its share.
    shares = {}
    for _ in range(3):
        for m in (a, b):
            member = ctx.cgroup().members[m]
            j = ctx.join("cg", m, protocols=(("range", encode_subscription(Subscription(("t",)), 0)),))
            assert j.error is E.NONE and j.response.leader == ""
            s = ctx.sync("cg", m, j.response.generation_id)
            shares[m] = partitions(s.response)
        new = ctx.cgroup().members["new"]
        ctx.cg_heartbeat("new", new.epoch, owned=new.current.assigned)
    new_parts = {p for _, ps in ctx.cgroup().members["new"].current.assigned for p in ps}
    assert shares[a] | shares[b] | new_parts == {0, 1, 2, 3}
    assert not (shares[a] & shares[b]) and not (new_parts & (shares[a] | shares[b]))
    assert ctx.cgroup().state() is GroupState.STABLE


def test_last_consumer_member_leaving_downgrades_to_classic():
    ctx = GroupContext()
    a, b = classic_stable_group(ctx)
    ctx.cg_heartbeat("new", 0, topics=["t"])
    ctx.cg_heartbeat("new", -1)
    assert "cg" in ctx.coord.groups and "cg" not in ctx.coord.consumer_groups
    group = ctx.group("cg")
    assert set(group.members) == {a, b} and group.state is S.PREPARING_REBALANCE
    # They rejoin the classic way; the leader assigns again.
    ja, jb = ctx.join("cg", a, protocols=PROTOCOLS), ctx.join("cg", b, protocols=PROTOCOLS)
    assert ja.error is E.NONE and jb.error is E.NONE and ja.response.leader == a
    # Replaying the whole log lands in the same place.
    fresh = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        fresh.replay(record)
    assert "cg" not in fresh.consumer_groups and "cg" in fresh.stored.classic_groups


def test_migration_policy_disabled_refuses_the_upgrade():
    ctx = GroupContext(GroupConfig(consumer_migration_policy="disabled"))
    classic_stable_group(ctx)
    assert ctx.cg_heartbeat("new", 0, topics=["t"]).error is E.GROUP_ID_NOT_FOUND
    assert ctx.group("cg").state is S.STABLE


def test_upgrade_keeps_the_group_alive_across_a_restart():
    ctx = GroupContext()
    a, b = classic_stable_group(ctx)
    ctx.cg_heartbeat("new", 0, topics=["t"])
    fresh = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        fresh.replay(record)
    assert fresh.consumer_groups == ctx.coord.consumer_groups
    assert "cg" not in fresh.stored.classic_groups


# ---- a refused upgrade changes nothing ------------------------------------------------------

def static_classic_group(ctx: GroupContext) -> tuple[str, str, int]:
    """Static classic members inst-0 (leader, partitions 0-1) and inst-1 (2-3), Stable."""
    ctx.set_topics(t=4)
    joins = [ctx.join("cg", instance="inst-0", protocols=PROTOCOLS),
             ctx.join("cg", instance="inst-1", protocols=PROTOCOLS)]
    ctx.run_until(lambda: all(j.done for j in joins))
    a, b = (j.response.member_id for j in joins)
    gen = joins[0].response.generation_id
    ctx.sync("cg", a, gen, {a: encode_assignment(Assignment((("t", (0, 1)),)), 0),
                            b: encode_assignment(Assignment((("t", (2, 3)),)), 0)})
    ctx.sync("cg", b, gen)
    assert ctx.group("cg").state is S.STABLE
    return a, b, gen


def test_kip848_consumer_member_reusing_a_static_classic_instance_id_leaves_the_classic_group_as_it_was():
    ctx = GroupContext()
    a, b, gen = static_classic_group(ctx)
    before, logged = shard_view(ctx.coord), len(ctx.log)
    refused = ctx.cg_heartbeat("newcomer", 0, topics=["t"], instance="inst-0")
    assert refused.error is E.UNRELEASED_INSTANCE_ID
    # Nothing moved: no record, no conversion, no timer cancelled, the same group object.
    assert len(ctx.log) == logged
    assert shard_view(ctx.coord) == before
    # The classic members carry on: same ids, generation and assignments, no rebalance.
    for _ in range(5):
        ctx.advance(3_000)
        assert ctx.heartbeat("cg", a, gen, instance="inst-0").error is E.NONE
        assert ctx.heartbeat("cg", b, gen, instance="inst-1").error is E.NONE
    group = ctx.group("cg")
    assert group.state is S.STABLE and group.generation == gen and list(group.members) == [a, b]
    assert partitions(ctx.sync("cg", b, gen, instance="inst-1").response) == {2, 3}


def test_kip848_refused_upgrade_keeps_a_parked_join_of_the_classic_rebalance():
    ctx = GroupContext()
    a, b, gen = static_classic_group(ctx)
    # inst-0 rejoins with new metadata: the group rebalances and its JoinGroup waits for inst-1.
    other = (("range", encode_subscription(Subscription(("t", "u")), 0)),)
    parked = ctx.join("cg", a, instance="inst-0", protocols=other)
    assert not parked.done and ctx.group("cg").state is S.PREPARING_REBALANCE
    before = shard_view(ctx.coord)
    assert ctx.cg_heartbeat("newcomer", 0, topics=["t"], instance="inst-1").error is E.UNRELEASED_INSTANCE_ID
    assert shard_view(ctx.coord) == before and not parked.done
    # inst-1 rejoins: the join phase completes and the parked JoinGroup gets its one answer.
    rejoined = ctx.join("cg", b, instance="inst-1", protocols=PROTOCOLS)
    assert parked.replies == 1 and parked.error is E.NONE and rejoined.error is E.NONE
    assert parked.response.generation_id == gen + 1 == rejoined.response.generation_id


def test_a_new_classic_member_of_a_consumer_group_is_first_handed_an_id():
    """As Kafka 4.4 does (KIP-394 in a consumer group): JoinGroup v4+ without a member id is
    answered MEMBER_ID_REQUIRED with an id and changes nothing; the join with it adds the
    member (a classic one, MemberType 0); v3 joins at once."""
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("c", 0, topics=["t"])
    epoch = ctx.cgroup().epoch
    first = ctx.join("cg", protocols=PROTOCOLS)
    assert first.error is E.MEMBER_ID_REQUIRED and first.response.member_id
    assert set(ctx.cgroup().members) == {"c"} and ctx.cgroup().epoch == epoch
    second = ctx.join("cg", first.response.member_id, protocols=PROTOCOLS)
    assert second.error is E.NONE
    (described,) = ctx.call(ctx.coord.consumer_group_describe, ("cg",)).response
    assert {x.member_id: x.member_type for x in described.members} == {"c": 1, first.response.member_id: 0}
    old = ctx.join("cg", protocols=PROTOCOLS, version=3)
    assert old.error is E.NONE and old.response.member_id in ctx.cgroup().members
