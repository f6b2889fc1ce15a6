"""Scenario tests for consumer-protocol groups (KIP-848) on the pure core."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from kgroup.core.consumer_group import GroupState, MemberState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E

from tests.unit.core.groupctx import GroupContext

T = "id-t"


def owned(ctx: GroupContext, member: str) -> set[int]:
    m = ctx.cgroup().members[member]
    return {p for t, ps in m.owned() for p in ps}


def settle(ctx: GroupContext, members: list[str], rounds: int = 6) -> None:
    """Every member heartbeats with what it was told, a few rounds, like a live client."""
    for _ in range(rounds):
        for mid in members:
            m = ctx.cgroup().members.get(mid)
            if m is not None:
                ctx.cg_heartbeat(mid, m.epoch, owned=m.current.assigned)


def stable_group(ctx: GroupContext, n: int, partitions: int = 6) -> list[str]:
    ctx.set_topics(t=partitions)
    members = [f"m{i}" for i in range(n)]
    for mid in members:
        ctx.cg_heartbeat(mid, 0, topics=["t"])
    settle(ctx, members)
    assert ctx.cgroup().state() is GroupState.STABLE
    return members


# ---- joining, epochs -----------------------------------------------------------------------

def test_first_member_gets_everything_at_epoch_two():
    # A new group starts at epoch 1 (Kafka 4.4), so its first member joins at epoch 2.
    ctx = GroupContext()
    ctx.set_topics(t=4)
    r = ctx.cg_heartbeat("a", 0, topics=["t"]).response
    assert r.error is E.NONE and r.member_epoch == 2 and r.assignment == ((T, (0, 1, 2, 3)),)
    assert r.heartbeat_interval_ms == 5_000


def test_epoch_above_the_members_is_fenced():
    ctx = GroupContext()
    stable_group(ctx, 1)
    assert ctx.cg_heartbeat("m0", 5).error is E.FENCED_MEMBER_EPOCH


def test_epoch_below_is_fenced_unless_previous_with_owned_subset():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    epoch = ctx.cgroup().members[a].epoch
    assert epoch == 3
    # The previous epoch with owned partitions inside the assignment: it missed a response.
    mine = ctx.cgroup().members[a].current.assigned
    assert ctx.cg_heartbeat(a, 2, owned=mine).error is E.NONE
    # The previous epoch claiming partitions it no longer has: fenced.
    assert ctx.cg_heartbeat(a, 2, owned=[(T, range(6))]).error is E.FENCED_MEMBER_EPOCH
    # Once the member has moved on twice, the epoch before the previous one is fenced too.
    ctx.cg_heartbeat("m2", 0, topics=["t"])
    settle(ctx, [a, b, "m2"])
    member = ctx.cgroup().members[a]
    assert member.epoch == 4 and member.current.previous_member_epoch == 3
    assert ctx.cg_heartbeat(a, 2, owned=member.current.assigned).error is E.FENCED_MEMBER_EPOCH


def test_unknown_member_gets_unknown_member_id():
    ctx = GroupContext()
    stable_group(ctx, 1)
    assert ctx.cg_heartbeat("ghost", 3).error is E.UNKNOWN_MEMBER_ID


# ---- reconciliation ------------------------------------------------------------------------

def test_partition_reaches_its_new_owner_only_after_the_old_one_released_it():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    c_join = ctx.cg_heartbeat("m2", 0, topics=["t"]).response
    assert c_join.assignment == ()                              # everything it will get is still held
    # a and b are told to revoke one partition each; they stay at their epoch meanwhile.
    ra = ctx.cg_heartbeat(a, 3).response
    assert ctx.cgroup().members[a].state is MemberState.UNREVOKED_PARTITIONS
    assert ra.member_epoch == 3 and len(dict(ra.assignment)[T]) == 2
    assert ctx.cg_heartbeat("m2", c_join.member_epoch).response.assignment in (None, ())
    # a acknowledges the revocation; its partition is now free and m2 can have it.
    ctx.cg_heartbeat(a, 3, owned=ra.assignment)
    got = ctx.cg_heartbeat("m2", c_join.member_epoch).response.assignment
    assert len(dict(got)[T]) == 1
    settle(ctx, [a, b, "m2"])
    assert ctx.cgroup().state() is GroupState.STABLE
    assert sorted(len(owned(ctx, m)) for m in (a, b, "m2")) == [2, 2, 2]


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    ctx.cg_heartbeat("m2", 0, topics=["t"])
    ctx.cg_heartbeat(a, 3)                                      # told to revoke; never does
    assert ctx.cgroup().members[a].state is MemberState.UNREVOKED_PARTITIONS
    for _ in range(12):                                         # heartbeats, but keeps the partitions
        ctx.advance(5_000)
        if a in ctx.cgroup().members:
            ctx.cg_heartbeat(a, 3, owned=[(T, sorted(owned(ctx, a)))])
        ctx.cg_heartbeat(b, ctx.cgroup().members[b].epoch, owned=ctx.cgroup().members[b].current.assigned)
        ctx.cg_heartbeat("m2", ctx.cgroup().members["m2"].epoch)
    assert a not in ctx.cgroup().members                        # rebalance timeout 60 s


def test_session_timeout_fences_a_silent_member_and_bumps_the_epoch():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    epoch = ctx.cgroup().epoch
    for _ in range(10):
        ctx.advance(5_000)
        ctx.cg_heartbeat(a, ctx.cgroup().members[a].epoch, owned=ctx.cgroup().members[a].current.assigned)
    assert b not in ctx.cgroup().members and ctx.cgroup().epoch == epoch + 1
    settle(ctx, [a])
    assert owned(ctx, a) == set(range(6))


def test_leave_with_epoch_minus_one_bumps_the_epoch_and_frees_partitions():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    epoch = ctx.cgroup().epoch
    r = ctx.cg_heartbeat(b, -1).response
    assert r.member_epoch == -1 and ctx.cgroup().epoch == epoch + 1
    settle(ctx, [a])
    assert owned(ctx, a) == set(range(6))


# ---- static members ------------------------------------------------------------------------

def test_static_member_temporary_leave_keeps_its_partitions_without_an_epoch_bump():
    ctx = GroupContext()
    ctx.set_topics(t=6)
    for i in range(2):
        ctx.cg_heartbeat(f"m{i}", 0, topics=["t"], instance=f"i{i}")
    settle(ctx, ["m0", "m1"])
    mine = owned(ctx, "m1")
    epoch = ctx.cgroup().epoch
    assert ctx.cg_heartbeat("m1", -2, instance="i1").response.member_epoch == -2
    assert ctx.cgroup().epoch == epoch                          # no bump
    back = ctx.cg_heartbeat("m1-restarted", 0, topics=["t"], instance="i1").response
    assert back.error is E.NONE and {p for _, ps in back.assignment for p in ps} == mine
    assert ctx.cgroup().epoch == epoch and "m1" not in ctx.cgroup().members


def test_live_member_rejoining_as_a_departed_static_member_leaves_no_partition_to_no_one():
    # m0 (dynamic) holds everything; static m1 joins (its target: half) and leaves for a while;
    # m0 rejoins with epoch 0 under m1's instance id. Kafka 4.4 copies m1 onto m0's id with no
    # epoch bump and m0's own half is then no one's (conformance scenario
    # consumer_rejoin_as_departed_static_member); here m0's previous self counts as gone.
    ctx = GroupContext()
    ctx.set_topics(t=4)
    ctx.cg_heartbeat("m0", 0, topics=["t"])
    settle(ctx, ["m0"])
    ctx.cg_heartbeat("m1", 0, topics=["t"], instance="i1")
    ctx.cg_heartbeat("m1", -2, instance="i1")
    epoch = ctx.cgroup().epoch
    back = ctx.cg_heartbeat("m0", 0, topics=["t"], instance="i1").response
    assert back.error is E.NONE and back.member_epoch == epoch + 1
    settle(ctx, ["m0"])
    group = ctx.cgroup()
    assert set(group.members) == {"m0"} and group.members["m0"].meta.instance_id == "i1"
    assert group.state() is GroupState.STABLE and owned(ctx, "m0") == {0, 1, 2, 3}


def test_instance_id_still_in_use_gets_unreleased_instance_id():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i")
    assert ctx.cg_heartbeat("b", 0, topics=["t"], instance="i").error is E.UNRELEASED_INSTANCE_ID


def test_static_member_expires_after_its_session_once_it_left_temporarily():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i")
    ctx.cg_heartbeat("a", -2, instance="i")
    ctx.advance(45_000)
    assert "a" not in ctx.cgroup().members


# ---- validation ----------------------------------------------------------------------------

def test_request_validation():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    assert ctx.cg_heartbeat("", 0, topics=["t"]).error is E.INVALID_REQUEST           # v1 needs a member id
    assert ctx.cg_heartbeat("a", 0, topics=None).error is E.INVALID_REQUEST          # join needs a subscription
    assert ctx.cg_heartbeat("a", 0, topics=["t"], owned=[(T, [0])]).error is E.INVALID_REQUEST
    assert ctx.cg_heartbeat("a", -2).error is E.INVALID_REQUEST                      # -2 is for static members
    assert ctx.cg_heartbeat("a", 0, topics=["t"], assignor="magic").error is E.UNSUPPORTED_ASSIGNOR
    assert ctx.cg_heartbeat("a", 0, regex="logs-[").error is E.INVALID_REGULAR_EXPRESSION
    # Kafka refuses an empty group id as a malformed request, not INVALID_GROUP_ID.
    assert ctx.cg_heartbeat("a", 0, topics=["t"], group="").error is E.INVALID_REQUEST


def test_response_carries_the_assignment_only_when_it_changed_or_was_asked_in_full():
    ctx = GroupContext()
    (a,) = stable_group(ctx, 1)
    member = ctx.cgroup().members[a]
    assert ctx.cg_heartbeat(a, member.epoch).response.assignment is None
    full = ctx.cg_heartbeat(a, member.epoch, topics=["t"], rebalance=60_000, owned=member.current.assigned)
    assert full.response.assignment == member.current.assigned


# ---- topics, regex, assignors --------------------------------------------------------------

def test_partition_count_change_bumps_the_epoch_and_assigns_new_partitions():
    ctx = GroupContext()
    a, b = stable_group(ctx, 2, partitions=2)
    epoch = ctx.cgroup().epoch
    ctx.set_topics(t=4)
    assert ctx.cgroup().epoch == epoch + 1
    settle(ctx, [a, b])
    assert owned(ctx, a) | owned(ctx, b) == {0, 1, 2, 3}


def test_deleting_a_subscribed_topic_bumps_the_epoch_and_takes_its_partitions_away():
    ctx = GroupContext()
    ctx.set_topics(t=2, u=2)
    for mid in ("a", "b"):
        ctx.cg_heartbeat(mid, 0, topics=["t", "u"])
    settle(ctx, ["a", "b"])
    assert {t for m in ("a", "b") for t, _ in ctx.cgroup().members[m].current.assigned} == {"id-t", "id-u"}
    epoch = ctx.cgroup().epoch
    ctx.set_topics(t=2)                                     # u is deleted
    assert ctx.cgroup().epoch == epoch + 1
    settle(ctx, ["a", "b"])
    assert ctx.cgroup().state() is GroupState.STABLE
    assert {t for m in ("a", "b") for t, _ in ctx.cgroup().members[m].current.assigned} == {"id-t"}
    assert owned(ctx, "a") | owned(ctx, "b") == {0, 1}


def test_regex_subscription_matches_topics_created_later_from_the_first_heartbeat_after_10s():
    # Kafka 4.4 resolves a group's regexes at most once per 10 s: a topic created within the
    # window waits for a heartbeat after it (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS).
    ctx = GroupContext()
    ctx.set_topics(**{"logs-a": 2})
    ctx.cg_heartbeat("a", 0, regex="logs-.*")
    ctx.advance(0)
    ctx.set_topics(**{"logs-a": 2, "logs-b": 1, "other": 3})
    settle(ctx, ["a"])
    assert {t for t, _ in ctx.cgroup().members["a"].current.assigned} == {"id-logs-a"}
    ctx.advance(10_000)
    settle(ctx, ["a"])                      # at 10 s exactly: still within the window
    assert {t for t, _ in ctx.cgroup().members["a"].current.assigned} == {"id-logs-a"}
    ctx.advance(1)
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch)
    ctx.advance(0)
    settle(ctx, ["a"])
    assert {t for t, _ in ctx.cgroup().members["a"].current.assigned} == {"id-logs-a", "id-logs-b"}


def test_range_assignor_when_members_ask_for_it():
    ctx = GroupContext()
    ctx.set_topics(t=4)
    for mid in ("a", "b"):
        ctx.cg_heartbeat(mid, 0, topics=["t"], assignor="range")
    settle(ctx, ["a", "b"])
    assert sorted(sorted(owned(ctx, m)) for m in ("a", "b")) == [[0, 1], [2, 3]]


# ---- offsets -------------------------------------------------------------------------------

def test_commit_with_a_stale_member_epoch_is_rejected():
    # An older epoch passes only for partitions held since then (KIP-1251, more in
    # test_kip1251_assignment_epochs.py); one ahead never does.
    ctx = GroupContext()
    a, b = stable_group(ctx, 2)
    epoch = ctx.cgroup().members[a].epoch
    mine = owned(ctx, a)
    theirs = sorted(set(range(6)) - mine)[0]
    assert ctx.commit("cg", a, epoch, {("t", 0): 5}, version=9).response.partitions[0].error is E.NONE
    assert ctx.commit("cg", a, epoch + 1, {("t", min(mine)): 6}, version=9).error is E.STALE_MEMBER_EPOCH
    assert ctx.commit("cg", a, epoch - 1, {("t", theirs): 6}, version=9).error is E.STALE_MEMBER_EPOCH
    assert ctx.commit("cg", a, epoch, {("t", 0): 6}, version=8).error is E.UNSUPPORTED_VERSION
    assert ctx.commit("cg", "ghost", epoch, {("t", 0): 6}, version=9).error is E.UNKNOWN_MEMBER_ID


def test_list_describe_and_delete_see_consumer_groups():
    ctx = GroupContext()
    (a,) = stable_group(ctx, 1)
    listed = ctx.list_groups(types=["consumer"])
    assert [(g.group_id, g.group_type, g.state) for g in listed] == [("cg", "consumer", "Stable")]
    assert ctx.delete_groups("cg")[0].error is E.NON_EMPTY_GROUP
    ctx.cg_heartbeat(a, -1)
    assert ctx.list_groups()[0].state == "Empty"
    assert ctx.delete_groups("cg")[0].error is E.NONE
    assert "cg" not in ctx.coord.consumer_groups


# ---- durability ----------------------------------------------------------------------------

def test_replaying_the_log_rebuilds_consumer_groups_exactly():
    ctx = GroupContext()
    stable_group(ctx, 3)
    ctx.cg_heartbeat("m3", 0, topics=["t"])
    fresh = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        fresh.replay(record)
    assert fresh.consumer_groups == ctx.coord.consumer_groups
    again = GroupCoordinatorShard(ctx.config)
    for record in ctx.coord.snapshot_records():
        again.replay(record)
    assert again.consumer_groups == ctx.coord.consumer_groups


# ---- property ------------------------------------------------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat-stale", "ack", "leave", "crash", "advance"]),
                         st.integers(0, 3)), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_no_partition_ever_has_two_owners_and_the_group_converges(operations):
    ctx = GroupContext()
    ctx.set_topics(t=5)
    ids = [f"m{i}" for i in range(4)]
    ctx.cg_heartbeat("m0", 0, topics=["t"])
    ctx.cg_heartbeat("m1", 0, topics=["t"])
    for op, i in operations:
        mid = ids[i]
        group = ctx.coord.consumer_groups.get("cg")
        member = group.members.get(mid) if group else None
        if op == "join" and member is None:
            ctx.cg_heartbeat(mid, 0, topics=["t"])
        elif member is not None and op == "beat":
            ctx.cg_heartbeat(mid, member.epoch)                 # never acknowledges revocations
        elif member is not None and op == "beat-stale":
            ctx.cg_heartbeat(mid, member.current.previous_member_epoch, owned=member.current.assigned)
        elif member is not None and op == "ack":
            ctx.cg_heartbeat(mid, member.epoch, owned=member.current.assigned)
        elif member is not None and op == "leave":
            ctx.cg_heartbeat(mid, -1)
        elif op == "crash":
            ctx.advance(20_000)
        elif op == "advance":
            ctx.advance(1_000)
        group = ctx.coord.consumer_groups.get("cg")
        if group is not None:
            seen: dict[int, str] = {}
            for m in group.members.values():
                for _, ps in m.owned():
                    for p in ps:
                        assert p not in seen, f"partition {p} owned by {seen[p]} and {m.member_id}"
                        seen[p] = m.member_id
    # Membership stops changing: everyone left acknowledges until the group is Stable.
    group = ctx.coord.consumer_groups.get("cg")
    if group and group.members:
        settle(ctx, list(group.members), rounds=8)
        assert group.state() is GroupState.STABLE
        assigned = {p for m in group.members.values() for _, ps in m.current.assigned for p in ps}
        assert assigned == set(range(5))


def test_offset_fetch_with_a_stale_member_epoch_is_rejected():
    from kgroup.core.messages import OffsetFetchRequest

    ctx = GroupContext()
    (a,) = stable_group(ctx, 1)
    epoch = ctx.cgroup().members[a].epoch
    ok = ctx.call(ctx.coord.fetch_offsets, OffsetFetchRequest("cg", None, member_id=a, member_epoch=epoch))
    stale = ctx.call(ctx.coord.fetch_offsets, OffsetFetchRequest("cg", None, member_id=a, member_epoch=epoch - 1))
    assert ok.error is E.NONE and stale.error is E.STALE_MEMBER_EPOCH


def test_per_group_overrides_of_session_timeout_and_heartbeat_interval():
    from kgroup.core.config import GroupConfig

    ctx = GroupContext(GroupConfig(consumer_group_overrides=(("fast", 50_000, 10_000),)))
    ctx.set_topics(t=1)
    assert ctx.cg_heartbeat("a", 0, topics=["t"], group="fast").response.heartbeat_interval_ms == 10_000
    assert ctx.cg_heartbeat("b", 0, topics=["t"], group="other").response.heartbeat_interval_ms == 5_000
    ctx.advance(45_000)                                     # the broker default session ends ...
    assert "b" not in ctx.cgroup("other").members
    assert "a" in ctx.cgroup("fast").members                # ... but "fast" has 50 s
    ctx.advance(5_000)
    assert "a" not in ctx.cgroup("fast").members


# ---- the member transition table ------------------------------------------------------------

def test_member_transitions_move_the_epoch_as_the_table_says():
    from kgroup.core.consumer_group import MEMBER_TRANSITIONS, EpochMove, check_member_transition
    from kgroup.core.errors import IllegalGroupTransition
    from kgroup.core.records import ConsumerCurrentValue

    def at(state: MemberState, epoch: int) -> ConsumerCurrentValue:
        return ConsumerCurrentValue(epoch, epoch - 1, state, (), ())

    for source, moves in MEMBER_TRANSITIONS.items():
        for target, move in moves.items():
            right = 4 if move is EpochMove.KEEP else 7
            check_member_transition(at(source, 4), at(target, right), 7)
            wrong = 7 if move is EpochMove.KEEP else 4
            try:
                check_member_transition(at(source, 4), at(target, wrong), 7)
            except IllegalGroupTransition:
                pass
            else:
                raise AssertionError(f"{source} -> {target} at epoch {wrong} was allowed")
    # Revoking keeps the epoch; reaching STABLE or UNRELEASED takes the target's.
    assert {t: m for t, m in MEMBER_TRANSITIONS[MemberState.STABLE].items()} == {
        MemberState.STABLE: EpochMove.TO_TARGET, MemberState.UNRELEASED_PARTITIONS: EpochMove.TO_TARGET,
        MemberState.UNREVOKED_PARTITIONS: EpochMove.KEEP}


def test_offset_delete_of_a_consumer_group_spares_the_topics_its_members_subscribe_to():
    ctx = GroupContext()
    ctx.set_topics(t=2, u=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    epoch = ctx.cgroup().members["a"].epoch
    committed = ctx.commit("cg", "a", epoch, {("t", 0): 5, ("u", 1): 3}, version=9).response
    assert all(p.error is E.NONE for p in committed.partitions)
    done = ctx.delete_offsets("cg", [("t", 0), ("u", 1)])
    assert {(p.topic, p.error) for p in done.response.partitions} == {("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("u", E.NONE)}
    assert ctx.committed("cg") == {("t", 0): 5}
    ctx.cg_heartbeat("a", -1)                               # the group is empty: nothing is spared
    ctx.delete_offsets("cg", [("t", 0)])
    assert ctx.committed("cg") == {}
    assert ctx.delete_offsets("nobody", [("t", 0)]).raised is E.GROUP_ID_NOT_FOUND


def test_kip848_a_heartbeat_past_epoch_zero_to_a_group_that_does_not_exist_is_group_id_not_found():
    """Only a join (epoch 0) makes a group; Kafka 4.4 answers any other epoch GROUP_ID_NOT_FOUND
    (docs/protocol.md, "Requests for resources that do not exist")."""
    ctx = GroupContext()
    for epoch in (1, 5, -1):
        assert ctx.cg_heartbeat("ghost", epoch, group="nowhere").error is E.GROUP_ID_NOT_FOUND
    assert "nowhere" not in ctx.coord.consumer_groups
    assert ctx.cg_heartbeat("m1", 0, group="nowhere", topics=["t"]).error is E.NONE
