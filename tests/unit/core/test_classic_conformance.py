"""Classic-group rules the differential suite found kgroup breaking (docs/conformance.md),
each pinned here on the pure coordinator as Apache Kafka 4.4 behaves."""

from __future__ import annotations

from kgroup.core.errors import ErrorCode as E

from tests.unit.core.groupctx import GroupContext


def test_a_described_member_keeps_its_last_assignment_while_the_group_rebalances():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    ctx.join("g", a)                               # the leader rejoins: PreparingRebalance
    (described,) = ctx.describe("g")
    assert described.state == "PreparingRebalance"
    assert {m.member_id: m.assignment for m in described.members} == {
        a: f"assignment-of-{a}".encode(), b: f"assignment-of-{b}".encode()}
    assert all(m.metadata == b"" for m in described.members)   # metadata only when Stable


def test_a_member_keeps_the_client_id_it_joined_with_when_it_rejoins():
    ctx = GroupContext()
    (a,) = ctx.stable_group(1, client_id="first")
    ctx.join("g", a, client_id="second")
    assert ctx.group().members[a].client_id == "first"


def test_a_restarted_static_member_keeps_the_client_id_of_the_one_it_replaces():
    ctx = GroupContext()
    (old,) = ctx.stable_group(1, static=True, client_id="before-restart")
    restarted = ctx.join("g", instance="instance-0", client_id="after-restart")
    assert restarted.error is E.NONE and restarted.response.member_id != old
    (described,) = ctx.describe("g")
    assert [m.client_id for m in described.members] == ["before-restart"]


def test_a_simple_commit_of_no_offsets_makes_no_group():
    """Kafka's simple group exists once a commit writes an offset: a commit of nothing
    (an empty topic list) leaves no group to list, describe or delete."""
    ctx = GroupContext()
    assert ctx.commit("nothing", "", -1, {}).response.partitions == ()
    assert "nothing" not in {g.group_id for g in ctx.list_groups()}
    assert ctx.describe("nothing")[0].state == "Dead"


def test_sync_heartbeat_and_leave_for_the_empty_group_id_are_invalid_group_id():
    ctx = GroupContext()
    assert ctx.sync("", "m", 1).error is E.INVALID_GROUP_ID
    assert ctx.heartbeat("", "m", 1).error is E.INVALID_GROUP_ID
    assert ctx.leave("", "m").error is E.INVALID_GROUP_ID


def test_the_empty_group_id_is_described_and_deleted_as_any_missing_group_but_consumer_describe_refuses_it():
    """Kafka 4.4 keeps DescribeGroups and DeleteGroups working for the empty group id (old
    clients used it): Dead / GROUP_ID_NOT_FOUND; ConsumerGroupDescribe refuses it, INVALID_GROUP_ID."""
    ctx = GroupContext()
    (described,) = ctx.describe("")
    assert (described.error, described.state) == (E.NONE, "Dead")
    assert [r.error for r in ctx.delete_groups("")] == [E.GROUP_ID_NOT_FOUND]
    (consumer,) = ctx.call(ctx.coord.consumer_group_describe, ("",)).response
    assert consumer.error is E.INVALID_GROUP_ID
