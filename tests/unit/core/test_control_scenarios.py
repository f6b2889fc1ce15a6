"""The control API's group operations on the pure core: inspect, rebalance now, expire."""

from __future__ import annotations

from kgroup.assignors import Assignment, encode_assignment
from kgroup.core.consumer_group import GroupState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest
from kgroup.core.timers import classic_join_key

from tests.unit.core.groupctx import GroupContext, Pending, shard_view
from tests.unit.core.test_consumer_scenarios import settle, stable_group as stable_consumer_group


def inspect(ctx: GroupContext, group: str) -> Pending:
    return ctx.call(ctx.coord.inspect_group, GroupControlRequest(group))


def rebalance(ctx: GroupContext, group: str) -> Pending:
    return ctx.call(ctx.coord.rebalance_group, GroupControlRequest(group))


def expire(ctx: GroupContext, group: str, member: str) -> Pending:
    return ctx.call(ctx.coord.expire_member, ExpireMemberRequest(group, member))


def consumer_group_of_two(ctx: GroupContext, **join) -> list[str]:
    """A Stable classic group whose leader assigned real ConsumerProtocol bytes."""
    joins = [ctx.join_new("g", **join), ctx.join_new("g", **join)]
    ctx.run_until(lambda: all(j.done for j in joins))
    members = [j.response.member_id for j in joins]
    generation = joins[0].response.generation_id
    leader = joins[0].response.leader
    follower = next(m for m in members if m != leader)
    assignments = {leader: encode_assignment(Assignment((("orders", (0, 1)),)), 0),
                   follower: encode_assignment(Assignment((("orders", (2,)),)), 0)}
    assert ctx.sync("g", leader, generation, assignments).error is E.NONE
    assert ctx.sync("g", follower, generation).error is E.NONE
    return [leader, follower]


def replayed(ctx: GroupContext) -> GroupCoordinatorShard:
    coord = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        coord.replay(record)
    return coord


# ---- inspect ----------------------------------------------------------------------------------

def test_inspect_a_stable_classic_group_shows_generation_protocol_and_decoded_assignments():
    ctx = GroupContext()
    leader, follower = consumer_group_of_two(ctx)
    view = inspect(ctx, "g").response
    assert (view.kind, view.state, view.protocol_type, view.protocol) == ("classic", "Stable", "consumer", "range")
    assert view.generation == 1 and view.group_epoch is None
    by_id = {m.member_id: m for m in view.members}
    assert by_id[leader].assignment == (("orders", (0, 1)),)
    assert by_id[follower].assignment == (("orders", (2,)),)
    assert by_id[leader].client_id == "client" and by_id[leader].member_epoch is None


def test_inspect_a_classic_group_of_another_protocol_type_leaves_assignments_opaque():
    ctx = GroupContext()
    ctx.stable_group(1, protocol_type="connect")
    (member,) = inspect(ctx, "g").response.members
    assert member.assignment is None


def test_inspect_a_consumer_group_names_topics_and_shows_epochs():
    ctx = GroupContext()
    a, b = stable_consumer_group(ctx, 2, partitions=4)
    view = inspect(ctx, "cg").response
    assert (view.kind, view.state, view.assignor) == ("consumer", "Stable", "uniform")
    assert view.group_epoch == view.assignment_epoch == 3 and view.generation is None   # new groups start at 1
    assigned = sorted(p for m in view.members for t, ps in m.assignment for p in ps if t == "t")
    assert assigned == [0, 1, 2, 3]
    assert all(m.member_epoch == 3 and m.protocol == "consumer" for m in view.members)


def test_inspect_shows_pending_revocations_by_topic_name():
    ctx = GroupContext()
    (a,) = stable_consumer_group(ctx, 1, partitions=4)
    ctx.cg_heartbeat("b", 0, topics=["t"])
    ctx.cg_heartbeat(a, ctx.cgroup().members[a].epoch)        # told to give two partitions up
    view = {m.member_id: m for m in inspect(ctx, "cg").response.members}
    assert view[a].pending_revocation and all(t == "t" for t, _ in view[a].pending_revocation)
    assert inspect(ctx, "cg").response.state == GroupState.RECONCILING.value


def test_inspect_of_a_missing_or_deleted_group_is_group_id_not_found():
    ctx = GroupContext()
    assert inspect(ctx, "nope").error is E.GROUP_ID_NOT_FOUND
    ctx.stable_group(1)
    (member,) = ctx.group().members
    ctx.leave("g", member)
    ctx.delete_groups("g")
    assert inspect(ctx, "g").error is E.GROUP_ID_NOT_FOUND


# ---- rebalance now ----------------------------------------------------------------------------

def test_rebalance_of_a_stable_classic_group_prepares_one_and_members_rejoin_into_the_next_generation():
    ctx = GroupContext()
    members = ctx.stable_group(2)
    assert rebalance(ctx, "g").response == "g"
    assert ctx.group().state.value == "PreparingRebalance"
    assert ctx.heartbeat("g", members[0], 1).error is E.REBALANCE_IN_PROGRESS
    joins = [ctx.join("g", m) for m in members]
    assert all(j.done and j.response.generation_id == 2 for j in joins)
    ctx.complete_rebalance(joins)
    assert ctx.group().state.value == "Stable"


def test_rebalance_while_preparing_goes_on_as_it_is():
    ctx = GroupContext()
    members = ctx.stable_group(2)
    rebalance(ctx, "g")
    ctx.advance(1_000)
    deadline = ctx.coord.shard.timers.deadline(classic_join_key("g"))
    assert rebalance(ctx, "g").response == "g"
    # Still the same rebalance: its timeout was not pushed back.
    assert ctx.group().state.value == "PreparingRebalance"
    assert ctx.coord.shard.timers.deadline(classic_join_key("g")) == deadline
    assert ctx.heartbeat("g", members[1], 1).error is E.REBALANCE_IN_PROGRESS


def test_rebalance_of_a_group_without_members_is_refused_and_changes_nothing():
    ctx = GroupContext()
    ctx.stable_group(1)
    (member,) = ctx.group().members
    ctx.leave("g", member)
    before = shard_view(ctx.coord)
    assert rebalance(ctx, "g").error is E.INVALID_REQUEST
    assert rebalance(ctx, "missing").error is E.GROUP_ID_NOT_FOUND
    assert shard_view(ctx.coord) == before


def test_rebalance_of_a_consumer_group_bumps_the_epoch_and_every_member_reconciles_to_it():
    ctx = GroupContext()
    members = stable_consumer_group(ctx, 2)
    epoch = ctx.cgroup().epoch
    assignment = {m: ctx.cgroup().members[m].current.assigned for m in members}
    assert rebalance(ctx, "cg").response == "cg"
    assert ctx.cgroup().epoch == epoch + 1
    assert ctx.cgroup().state() is GroupState.ASSIGNING
    settle(ctx, members)
    group = ctx.cgroup()
    assert group.state() is GroupState.STABLE and group.target_epoch == epoch + 1
    assert all(group.members[m].epoch == epoch + 1 for m in members)
    # Nothing else changed, so the uniform assignor keeps every partition where it was.
    assert {m: group.members[m].current.assigned for m in members} == assignment


# ---- expire -----------------------------------------------------------------------------------

def test_expire_of_a_classic_member_removes_it_and_the_rest_rebalance_without_it():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    assert expire(ctx, "g", b).response == b
    group = ctx.group()
    assert list(group.members) == [a] and group.state.value == "PreparingRebalance"
    assert ctx.heartbeat("g", b, 1).error is E.UNKNOWN_MEMBER_ID
    join = ctx.join("g", a)
    assert join.done and join.response.generation_id == 2 and join.response.leader == a


def test_expire_answers_a_parked_join_with_unknown_member_id():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    parked = ctx.join("g", a, protocols=(("range", b"changed"),))
    assert not parked.done
    expire(ctx, "g", a)
    assert parked.error is E.UNKNOWN_MEMBER_ID


def test_expire_by_instance_id_of_a_static_member():
    ctx = GroupContext()
    ctx.stable_group(2, static=True)
    member_id = ctx.group().static_member_id("instance-1")
    assert expire(ctx, "g", "instance-1").response == member_id
    assert ctx.group().static_member_id("instance-1") is None


def test_expire_of_an_unknown_member_changes_nothing():
    ctx = GroupContext()
    ctx.stable_group(2)
    before = shard_view(ctx.coord)
    assert expire(ctx, "g", "who").error is E.UNKNOWN_MEMBER_ID
    assert expire(ctx, "missing", "who").error is E.GROUP_ID_NOT_FOUND
    assert shard_view(ctx.coord) == before


def test_expire_of_a_consumer_member_fences_it_and_its_partitions_go_to_the_others():
    ctx = GroupContext()
    a, b = stable_consumer_group(ctx, 2)
    epoch = ctx.cgroup().epoch
    assert expire(ctx, "cg", b).response == b
    assert b not in ctx.cgroup().members and ctx.cgroup().epoch == epoch + 1
    assert ctx.cg_heartbeat(b, epoch).error is E.UNKNOWN_MEMBER_ID
    settle(ctx, [a])
    assert {p for _, ps in ctx.cgroup().members[a].current.assigned for p in ps} == set(range(6))


def test_control_changes_replay_to_the_same_stored_state():
    ctx = GroupContext()
    a, b, c = stable_consumer_group(ctx, 3)
    rebalance(ctx, "cg")
    settle(ctx, [a, b, c])
    expire(ctx, "cg", c)
    settle(ctx, [a, b])
    again = replayed(ctx)
    assert again.consumer_groups == ctx.coord.consumer_groups
    assert again.stored == ctx.coord.stored


# ---- group events -----------------------------------------------------------------------------

def test_control_operations_show_in_the_group_events_with_their_reason():
    from kgroup.core.group_events import EventKind
    from tests.unit.core.test_group_events import EventContext

    ctx = EventContext()
    a, b = ctx.stable_group(2)
    mark = len(ctx.events)
    rebalance(ctx, "g")
    started = [e for e in ctx.events[mark:] if e.kind is EventKind.REBALANCE_STARTED]
    assert [e.reason for e in started] == ["rebalance requested"]
    mark = len(ctx.events)
    expire(ctx, "g", b)
    gone = [e for e in ctx.events[mark:] if e.kind is EventKind.MEMBER_EXPIRED]
    assert [(e.member, e.reason) for e in gone] == [(b, "expired on request")]
