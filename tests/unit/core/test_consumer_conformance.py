"""Consumer-protocol rules the differential suite found kgroup breaking (docs/conformance.md),
each pinned here on the pure coordinator as Apache Kafka 4.4 behaves."""

from __future__ import annotations

from kgroup.assignors import Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription
from kgroup.core.classic_group import ClassicGroupState as S
from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import MemberState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E
from kgroup.core.records import ConsumerRegexRecord

from tests.unit.core.groupctx import GroupContext

T = "id-t"


def settle(ctx: GroupContext, members) -> None:
    for _ in range(6):
        for mid in members:
            m = ctx.cgroup().members.get(mid)
            if m is not None:
                ctx.cg_heartbeat(mid, m.epoch, owned=m.current.assigned)


def a_settled_on_t(partitions: int, instance: str | None = None) -> tuple[GroupContext, int]:
    """Member a settled alone on topic t (static with `instance`): the context and the
    group epoch it settled at."""
    ctx = GroupContext()
    ctx.set_topics(t=partitions)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance=instance)
    settle(ctx, ["a"])
    return ctx, ctx.cgroup().epoch


def b_joins_a_settled_on_four(instance: str | None = None) -> GroupContext:
    """Member a settled alone on t's four partitions (static with `instance`), then b joins:
    a's next heartbeat is where it is told to give two of them up."""
    ctx, _ = a_settled_on_t(4, instance)
    ctx.cg_heartbeat("b", 0, topics=["t"])
    return ctx


def test_a_new_consumer_group_starts_at_epoch_one_so_its_first_member_joins_at_two():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    r = ctx.cg_heartbeat("a", 0, topics=["t"]).response
    assert r.member_epoch == 2 and ctx.cgroup().epoch == ctx.cgroup().target_epoch == 2


def test_the_last_member_leaving_moves_the_assignment_epoch_with_the_group_epoch():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    settle(ctx, ["a"])
    ctx.cg_heartbeat("a", -1)
    assert ctx.cgroup().epoch == ctx.cgroup().target_epoch == 3


def test_a_member_leaving_a_group_with_others_leaves_the_assignment_epoch_behind():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    for m in ("a", "b"):
        ctx.cg_heartbeat(m, 0, topics=["t"])
    settle(ctx, ["a", "b"])
    epoch = ctx.cgroup().epoch
    ctx.cg_heartbeat("b", -1)
    assert (ctx.cgroup().epoch, ctx.cgroup().target_epoch) == (epoch + 1, epoch)


def test_the_old_member_id_of_a_replaced_static_member_is_fenced_instance_id():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i-a")
    settle(ctx, ["a"])
    epoch = ctx.cgroup().members["a"].epoch
    ctx.cg_heartbeat("a", -2, instance="i-a")
    ctx.cg_heartbeat("a2", 0, topics=["t"], instance="i-a")
    assert ctx.cg_heartbeat("a", epoch, instance="i-a").error is E.FENCED_INSTANCE_ID
    assert ctx.cg_heartbeat("ghost", epoch, instance="i-nobody").error is E.UNKNOWN_MEMBER_ID


def test_a_new_epoch_without_new_partitions_is_answered_without_an_assignment():
    ctx = b_joins_a_settled_on_four()
    told = ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch).response      # revoke two
    kept = told.assignment
    moved = ctx.cg_heartbeat("a", told.member_epoch, owned=kept).response
    assert moved.member_epoch == told.member_epoch + 1 and moved.assignment is None


def test_describe_shows_a_revoking_members_pending_partitions_in_its_assignment():
    ctx = b_joins_a_settled_on_four()
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch)
    assert ctx.cgroup().members["a"].state is MemberState.UNREVOKED_PARTITIONS
    (described,) = ctx.call(ctx.coord.consumer_group_describe, ("cg",)).response
    a = next(m for m in described.members if m.member_id == "a")
    assert a.assignment == ((T, (0, 1, 2, 3)),) and len(dict(a.target_assignment)[T]) == 2


def test_a_regex_new_to_the_group_is_resolved_after_the_heartbeat_that_brought_it():
    ctx = GroupContext()
    ctx.set_topics(**{"logs-a": 1, "logs-b": 2, "other": 1})
    r = ctx.cg_heartbeat("a", 0, regex="logs-.*").response
    assert r.member_epoch == 1 and r.assignment == ()        # nothing yet, no bump
    ctx.advance(0)                                           # the resolution runs
    assert ctx.cgroup().epoch == 2
    r = ctx.cg_heartbeat("a", r.member_epoch, owned=[]).response
    assert r.member_epoch == 2 and sum(len(ps) for _, ps in r.assignment) == 3


def test_a_regex_already_resolved_for_the_group_counts_at_once():
    ctx = GroupContext()
    ctx.set_topics(**{"logs-a": 2})
    ctx.cg_heartbeat("a", 0, regex="logs-.*")
    ctx.advance(0)
    settle(ctx, ["a"])
    epoch = ctx.cgroup().epoch
    r = ctx.cg_heartbeat("b", 0, regex="logs-.*").response
    assert r.member_epoch == epoch + 1


def test_a_regex_matching_nothing_new_moves_no_epoch_when_resolved():
    ctx, epoch = a_settled_on_t(2)
    ctx.cg_heartbeat("b", 0, regex="nothing-.*")
    ctx.advance(0)
    assert ctx.cgroup().epoch == epoch


def test_a_regex_matching_a_topic_the_group_already_subscribes_to_moves_the_epoch_when_resolved():
    # Differential scenario consumer_regex_of_a_subscribed_topic: Kafka 4.4 gives B half of
    # t; kgroup compared only the group's subscribed topics, which did not change, and B
    # stayed without partitions for good.
    ctx, epoch = a_settled_on_t(4)
    r = ctx.cg_heartbeat("b", 0, regex="t").response
    assert r.member_epoch == epoch and ctx.cgroup().epoch == epoch     # no bump until resolved
    ctx.advance(0)
    assert ctx.cgroup().epoch == epoch + 1
    settle(ctx, ["a", "b"])
    held = {mid: sum(len(ps) for _, ps in m.current.assigned) for mid, m in ctx.cgroup().members.items()}
    assert held == {"a": 2, "b": 2}


def test_two_new_regexes_before_their_resolution_move_the_epoch_if_either_matched():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    settle(ctx, ["a"])
    epoch = ctx.cgroup().epoch
    ctx.cg_heartbeat("b", 0, regex="t")
    ctx.cg_heartbeat("c", 0, regex="nothing-.*")          # the same resolution, matching nothing
    ctx.advance(0)
    assert ctx.cgroup().epoch == epoch + 1


def regex_group() -> tuple[GroupContext, int]:
    """Member a subscribed by regex logs-.* (resolved at 0 to logs-a), topics logs-a and
    metrics-a: the context and the group epoch after the resolution."""
    ctx = GroupContext()
    ctx.set_topics(**{"logs-a": 2, "metrics-a": 2})
    ctx.cg_heartbeat("a", 0, regex="logs-.*")
    ctx.advance(0)
    settle(ctx, ["a"])
    return ctx, ctx.cgroup().epoch


def test_a_second_new_regex_within_10s_of_a_resolution_waits_for_a_heartbeat_after_them():
    # Kafka 4.4 resolves a group's regexes at most once per 10 s
    # (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS); differential scenario consumer_regex_batch_window.
    ctx, epoch = regex_group()
    ctx.advance(5_000)
    b = ctx.cg_heartbeat("b", 0, regex="metrics-.*").response
    ctx.advance(0)
    assert "metrics-.*" not in ctx.cgroup().regexes and ctx.cgroup().epoch == epoch
    ctx.advance(5_000)                                      # 10 s after the resolution: still in
    ctx.cg_heartbeat("b", b.member_epoch)
    ctx.advance(0)
    assert "metrics-.*" not in ctx.cgroup().regexes
    ctx.advance(1)
    ctx.cg_heartbeat("b", b.member_epoch)                   # after the window: resolved
    ctx.advance(0)
    group = ctx.cgroup()
    assert group.regexes["metrics-.*"].topics == ("metrics-a",) and group.epoch == epoch + 1
    assert group.regexes["metrics-.*"].timestamp_ms == group.regexes["logs-.*"].timestamp_ms == ctx.now


def test_a_regex_resolved_again_with_the_same_topics_moves_no_epoch():
    ctx, epoch = regex_group()
    ctx.set_topics(**{"logs-a": 2, "metrics-a": 2, "other": 1})    # a topic is created
    ctx.advance(10_001)
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch)
    ctx.advance(0)
    assert ctx.cgroup().regexes["logs-.*"].timestamp_ms == ctx.now and ctx.cgroup().epoch == epoch


def test_no_resolution_without_a_reason_until_the_refresh_interval():
    ctx, _ = regex_group()
    resolved = ctx.cgroup().regexes["logs-.*"]
    for _ in range(20):                                          # nothing new for 600 s
        ctx.advance(30_000)
        ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch)
        ctx.advance(0)
        assert ctx.cgroup().regexes["logs-.*"] == resolved
    ctx.advance(1)                                               # the 10-minute refresh interval
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch)
    ctx.advance(0)
    assert ctx.cgroup().regexes["logs-.*"].timestamp_ms == ctx.now == 600_001


def test_dropping_a_regex_moves_the_epoch_at_once_and_its_last_member_deletes_it():
    ctx, epoch = regex_group()
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch, regex="", topics=["metrics-a"])
    assert ctx.cgroup().epoch == epoch + 1 and ctx.cgroup().regexes == {}
    assert ConsumerRegexRecord("cg", "logs-.*", None) in ctx.log


def test_a_resolved_regex_goes_with_its_last_member_and_comes_back_from_the_log():
    ctx, _ = regex_group()
    ctx.cg_heartbeat("b", 0, regex="logs-.*")
    ctx.cg_heartbeat("c", 0, topics=["metrics-a"])
    fresh = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        fresh.replay(record)
    again = GroupCoordinatorShard(ctx.config)
    for record in ctx.coord.snapshot_records():
        again.replay(record)
    assert fresh.consumer_groups == again.consumer_groups == ctx.coord.consumer_groups
    assert fresh.consumer_groups["cg"].regexes == {"logs-.*": ctx.cgroup().regexes["logs-.*"]}
    ctx.cg_heartbeat("a", -1)
    assert "logs-.*" in ctx.cgroup().regexes                # b still subscribes with it
    ctx.cg_heartbeat("b", -1)
    assert ctx.cgroup().regexes == {} and ctx.log[-1] != ConsumerRegexRecord("cg", "logs-.*", None)
    assert ConsumerRegexRecord("cg", "logs-.*", None) in ctx.log


def test_a_member_switching_to_a_regex_not_resolved_yet_gives_up_its_partitions_at_once():
    # Kafka 4.4's CurrentAssignmentBuilder.updateCurrentAssignment (subscription changed, no
    # new target); differential scenario consumer_regex_switch_revokes.
    ctx, epoch = regex_group()
    owned = ctx.cgroup().members["a"].current.assigned
    r = ctx.cg_heartbeat("a", epoch, regex="metrics-.*", owned=owned).response
    a = ctx.cgroup().members["a"]
    assert (r.member_epoch, r.assignment, a.state) == (epoch, (), MemberState.UNREVOKED_PARTITIONS)
    assert a.current.pending_revocation == owned and ctx.cgroup().epoch == epoch     # no new target
    ctx.cg_heartbeat("a", epoch, owned=[])
    assert ctx.cgroup().members["a"].state is MemberState.STABLE and not ctx.cgroup().owners


def test_a_member_that_reports_not_owning_what_it_unsubscribed_from_skips_the_revocation_step():
    ctx, epoch = regex_group()
    ctx.cg_heartbeat("a", epoch, regex="metrics-.*", owned=[])
    a = ctx.cgroup().members["a"]
    assert (a.state, a.current.assigned, a.current.pending_revocation) == (MemberState.STABLE, (), ())


def test_within_the_assignment_interval_a_topic_dropped_is_given_up_at_once_and_not_handed_over():
    # KIP-1263: the new target waits for the interval, but the member's subscription counts
    # at once, both for what it holds and for the (older) target it walks to.
    ctx = GroupContext(GroupConfig(consumer_assignment_interval_ms=5_000), assign_at_once=False)
    ctx.set_topics(t=2, u=2)
    ctx.now = 10_000
    r = ctx.cg_heartbeat("a", 0, topics=["t", "u"]).response
    epoch, owned = r.member_epoch, r.assignment
    ctx.cg_heartbeat("a", epoch, owned=owned)
    ctx.advance(100)
    ctx.cg_heartbeat("a", epoch, topics=["u"], owned=owned)
    group = ctx.cgroup()
    assert group.target_epoch < group.epoch                                 # no new target yet
    assert group.members["a"].current.pending_revocation == (("id-t", (0, 1)),)
    ctx.cg_heartbeat("a", epoch, owned=[("id-u", [0, 1])])
    assert ctx.cgroup().members["a"].current.assigned == (("id-u", (0, 1)),)


SUB1 = encode_subscription(Subscription(("t",)), 1)


def test_a_classic_member_in_a_consumer_group_gets_its_assignment_in_its_subscription_version():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    j = ctx.join_new("cg", protocols=(("range", SUB1),))
    ctx.run_until(lambda: j.done)
    c = j.response.member_id
    ctx.sync("cg", c, j.response.generation_id, {c: encode_assignment(Assignment((("t", (0, 1)),)), 1)})
    ctx.cg_heartbeat("new", 0, topics=["t"])
    rejoined = ctx.join("cg", c, protocols=(("range", SUB1),))
    synced = ctx.sync("cg", c, rejoined.response.generation_id).response
    assert synced.assignment[:2] == b"\x00\x01"                 # ConsumerProtocol v1, as subscribed
    assert decode_assignment(synced.assignment).partitions


def test_a_downgrade_keeps_the_group_epoch_as_generation_and_hands_out_target_assignments():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    j = ctx.join_new("cg", protocols=(("range", SUB1),))
    ctx.run_until(lambda: j.done)
    c = j.response.member_id
    ctx.sync("cg", c, j.response.generation_id, {c: encode_assignment(Assignment((("t", (0, 1)),)), 1)})
    ctx.cg_heartbeat("new", 0, topics=["t"])
    epoch, target = ctx.cgroup().epoch, ctx.cgroup().target[c]
    ctx.cg_heartbeat("new", -1)
    group = ctx.group("cg")
    assert group.generation == epoch and group.state is S.PREPARING_REBALANCE
    assignment = group.members[c].assignment
    assert assignment[:2] == b"\x00\x01"
    assert {p for _, ps in decode_assignment(assignment).partitions for p in ps} == \
        {p for _, ps in target for p in ps}
    assert ctx.heartbeat("cg", c, epoch).error is E.REBALANCE_IN_PROGRESS


def test_the_classic_api_describes_a_consumer_group_as_dead():
    ctx = GroupContext()
    ctx.set_topics(t=1)
    ctx.cg_heartbeat("a", 0, topics=["t"], group="cg")
    (old,) = ctx.describe("cg")
    assert (old.state, old.error, old.members) == ("Dead", E.NONE, ())
    (new,) = ctx.describe("cg", missing_as_error=True)
    assert new.error is E.GROUP_ID_NOT_FOUND
    # DescribeGroups v6 says why, in Kafka 4.4's words.
    assert new.error_message == "Group cg is not a classic group."


def test_offset_delete_of_a_consumer_group_protects_its_subscribed_topics():
    ctx = GroupContext()
    ctx.set_topics(t=2, u=1)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.commit("cg", "", -1, {("t", 0): 1, ("u", 0): 2})   # a simple commit, written before
    deleted = ctx.delete_offsets("cg", [("t", 0), ("u", 0)]).response
    assert {(p.topic, p.error) for p in deleted.partitions} == {
        ("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("u", E.NONE)}


def test_consumer_group_describe_of_a_missing_group_has_no_state():
    ctx = GroupContext()
    (missing,) = ctx.call(ctx.coord.consumer_group_describe, ("nope",)).response
    assert (missing.error, missing.state) == (E.GROUP_ID_NOT_FOUND, "")


def test_an_empty_rack_or_instance_id_in_a_heartbeat_is_invalid_request():
    """Kafka refuses "" where a rack or an instance id may be null (throwIfEmptyString)."""
    from kgroup.core.messages import ConsumerGroupHeartbeatRequest
    from kgroup.core.share_messages import ShareGroupHeartbeatRequest

    ctx = GroupContext()
    ctx.set_topics(t=1)
    for bad in (dict(rack_id=""), dict(instance_id="")):
        done = ctx.call(ctx.coord.consumer_group_heartbeat, ConsumerGroupHeartbeatRequest(
            "cg", "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), owned=(), **bad))
        assert done.error is E.INVALID_REQUEST
    done = ctx.call(ctx.coord.share_group_heartbeat, ShareGroupHeartbeatRequest(
        "sg", "m", 0, rack_id="", subscribed_topic_names=("t",)))
    assert done.error is E.INVALID_REQUEST
    assert "cg" not in ctx.coord.consumer_groups and "sg" not in ctx.coord.share_groups


def test_a_share_heartbeat_with_a_member_id_longer_than_36_characters_is_invalid_request_without_a_message():
    """Kafka 4.4 takes member ids of up to 36 characters (a UUID's string form) in a
    ShareGroupHeartbeat; a longer one is INVALID_REQUEST with no message, before anything else."""
    import pytest

    from kgroup.core.errors import GroupError
    from kgroup.core.share_messages import ShareGroupHeartbeatRequest

    ctx = GroupContext()
    ctx.set_topics(t=1)
    for member, message in (("m" * 37, ""), ("m" * 36, "SubscribedTopicNames must be set in first request.")):
        with pytest.raises(GroupError) as raised:
            ctx.coord.share_group_heartbeat(ShareGroupHeartbeatRequest("sg", member, 0), None, ctx.now)
        assert (raised.value.code, raised.value.message) == (E.INVALID_REQUEST, message)
    assert "sg" not in ctx.coord.share_groups


# ---- KIP-848 reconciliation as Kafka 4.4's CurrentAssignmentBuilder does it ------------------
# Found by random ConsumerGroupHeartbeat sequences run on Kafka 4.4 and kgroup side by side;
# each has a differential scenario in kgroup.conformance.scenarios.consumer_raw.

def test_kip848_a_member_that_reports_not_owning_what_moves_skips_the_revocation_step():
    ctx = b_joins_a_settled_on_four()
    a = ctx.cgroup().members["a"]
    epoch = a.epoch
    r = ctx.cg_heartbeat("a", epoch, owned=[]).response     # it has let go of everything already
    a = ctx.cgroup().members["a"]
    assert (r.member_epoch, a.state) == (ctx.cgroup().target_epoch, MemberState.STABLE)
    assert a.current.previous_member_epoch == epoch and len(a.current.assigned[0][1]) == 2


def test_kip848_a_member_that_does_not_say_what_it_owns_is_still_asked_to_revoke():
    ctx = b_joins_a_settled_on_four()
    epoch = ctx.cgroup().members["a"].epoch
    r = ctx.cg_heartbeat("a", epoch).response                # owned not sent: it may own them
    a = ctx.cgroup().members["a"]
    assert (r.member_epoch, a.state) == (epoch, MemberState.UNREVOKED_PARTITIONS)
    assert a.current.previous_member_epoch == epoch          # every step records the epoch it left


def test_kip848_a_rejoin_keeps_the_epoch_it_had_as_previous_so_a_lost_answer_is_forgiven():
    ctx = GroupContext()
    ctx.set_topics(t=4, u=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    settle(ctx, ["a"])
    before = ctx.cgroup().members["a"].epoch
    r = ctx.cg_heartbeat("a", 0, topics=["t", "u"]).response   # rejoins (after a fence, say)
    assert r.member_epoch == before + 1
    assert ctx.cgroup().members["a"].current.previous_member_epoch == before
    # A heartbeat at the epoch before, owning what it was given, is answered (not fenced).
    owned = ctx.cgroup().members["a"].current.assigned
    assert ctx.cg_heartbeat("a", before, owned=owned).error is E.NONE


def test_kip848_a_static_member_cannot_rejoin_under_its_own_id_before_it_left():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i-a")
    settle(ctx, ["a"])
    assert ctx.cg_heartbeat("a", 0, topics=["t"], instance="i-a").error is E.UNRELEASED_INSTANCE_ID
    ctx.cg_heartbeat("a", -2, instance="i-a")
    r = ctx.cg_heartbeat("a", 0, topics=["t"], instance="i-a")
    assert r.error is E.NONE and ctx.cgroup().members["a"].current.previous_member_epoch == 0


def test_kip848_a_tie_between_server_assignors_goes_to_the_one_the_coordinator_lists_first():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"], assignor="range")
    ctx.cg_heartbeat("b", 0, topics=["t"], assignor="uniform")
    assert ctx.cgroup().assignor_name(GroupConfig()) == "uniform"
    ctx.cg_heartbeat("c", 0, topics=["t"], assignor="range")
    assert ctx.cgroup().assignor_name(GroupConfig()) == "range"


def test_kip848_a_static_member_leaving_while_it_revokes_lets_go_of_what_it_was_revoking():
    ctx = b_joins_a_settled_on_four(instance="i-a")
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch, instance="i-a")     # told to revoke
    assert ctx.cgroup().members["a"].current.pending_revocation
    ctx.cg_heartbeat("a", -2, instance="i-a")
    a = ctx.cgroup().members["a"].current
    assert a.pending_revocation == () and len(a.assigned[0][1]) == 2
    r = ctx.cg_heartbeat("b", ctx.cgroup().members["b"].epoch, owned=[]).response
    assert len(r.assignment[0][1]) == 2                                       # no longer waiting


def test_kip848_a_member_changing_its_server_assignor_moves_the_epoch_only_if_the_groups_changes():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    settle(ctx, ["a"])
    epoch = ctx.cgroup().epoch
    # Naming the assignor the group uses anyway (uniform, the default) changes nothing.
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch, assignor="uniform")
    assert ctx.cgroup().epoch == epoch
    ctx.cg_heartbeat("a", ctx.cgroup().members["a"].epoch, assignor="range")
    assert ctx.cgroup().epoch == epoch + 1 and ctx.cgroup().assignor_name(GroupConfig()) == "range"


def test_kip848_a_topic_named_twice_in_the_owned_partitions_counts_both_times():
    ctx = b_joins_a_settled_on_four()
    epoch = ctx.cgroup().members["a"].epoch
    # Owns all four, then names t again with one partition: it still owns what must move.
    r = ctx.cg_heartbeat("a", epoch, owned=[(T, (0, 1, 2, 3)), (T, (0,))]).response
    assert (r.member_epoch, ctx.cgroup().members["a"].state) == (epoch, MemberState.UNREVOKED_PARTITIONS)
