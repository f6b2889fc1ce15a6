"""Share groups (KIP-932) in the coordinator, on a manual clock: membership, epochs, the
share assignor, sessions, kinds that do not mix, the share-partition state and its offsets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.share_simple import SimpleShareAssignor
from kgroup.assignors.spec import GroupSpec, MemberSpec
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.messages import ListGroupsRequest
from kgroup.core.records import ShareStateValue
from kgroup.core.share_messages import (
    AlterShareOffsetsRequest,
    DescribeShareOffsetsRequest,
    ShareGroupHeartbeatRequest,
    ShareStateKey,
    WriteShareStateRequest,
)
from tests.unit.core.groupctx import GroupContext

CONFIG = GroupConfig(share_session_timeout_ms=10_000, share_heartbeat_interval_ms=1_000)


def ctx() -> GroupContext:
    c = GroupContext(CONFIG)
    c.set_topics(orders=2)
    return c


def hb(c: GroupContext, member: str, epoch: int, topics=None, group: str = "sg"):
    return c.call(c.coord.share_group_heartbeat, ShareGroupHeartbeatRequest(group, member, epoch,
                                                                            subscribed_topic_names=topics))


def partitions(resp) -> list[int]:
    return [p for _, ps in resp.assignment for p in ps]


def test_kip932_a_member_joins_with_epoch_zero_and_gets_every_partition_once_initialized():
    c = ctx()
    # A new group starts at epoch 1 (Kafka 4.4): the join is epoch 2, with nothing assigned
    # until the share partitions of the newly subscribed topic are initialized.
    r = hb(c, "m1", 0, ("orders",)).response
    assert r.error is ErrorCode.NONE and r.member_epoch == 2 and partitions(r) == []
    assert r.heartbeat_interval_ms == 1_000
    c.advance(0)                                              # initialized: epoch 3
    r = hb(c, "m1", 2).response
    assert r.member_epoch == 3 and partitions(r) == [0, 1]
    steady = hb(c, "m1", 3).response
    assert steady.member_epoch == 3 and steady.assignment is None


def test_kip932_more_members_than_partitions_share_partitions():
    c = ctx()
    for m in ("m1", "m2", "m3"):
        hb(c, m, 0, ("orders",))
    c.advance(0)                      # the topic's share partitions are initialized: epoch 5
    for m in ("m1", "m2", "m3"):      # each takes the target of the last join
        assert hb(c, m, c.coord.share_groups["sg"].members[m].epoch).response.member_epoch == 5
    group = c.coord.share_groups["sg"]
    assigned = {m: [p for _, ps in group.members[m].current.assigned for p in ps] for m in group.members}
    # Kafka 4.4's simple assignor: every partition goes to ceil(3/2) = 2 members, and the
    # four slots are spread 2, 1, 1.
    assert sorted(p for ps in assigned.values() for p in ps) == [0, 0, 1, 1]
    assert sorted(len(ps) for ps in assigned.values()) == [1, 1, 2], assigned


def test_kip932_a_full_share_group_refuses_a_new_member():
    c = GroupContext(GroupConfig(share_session_timeout_ms=10_000, share_heartbeat_interval_ms=1_000,
                                 share_max_size=2))
    c.set_topics(orders=2)
    hb(c, "m1", 0, ("orders",))
    hb(c, "m2", 0, ("orders",))
    assert hb(c, "m3", 0, ("orders",)).error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert sorted(c.coord.share_groups["sg"].members) == ["m1", "m2"]
    assert hb(c, "m2", 0, ("orders",)).error is ErrorCode.NONE          # a member rejoining is no newcomer


def test_kip932_a_stale_epoch_is_fenced_and_the_previous_one_is_forgiven():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    hb(c, "m2", 0, ("orders",))
    assert hb(c, "m1", 2).response.member_epoch == 3        # m1 moves to the new target
    assert hb(c, "m1", 2).error is ErrorCode.NONE           # the previous epoch: our answer was lost
    assert hb(c, "m1", 4).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(c, "nobody", 2).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_kip932_session_timeout_removes_a_silent_member_and_the_others_take_over():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    hb(c, "m2", 0, ("orders",))
    for _ in range(12):
        hb(c, "m2", c.coord.share_groups["sg"].members["m2"].epoch)
        c.advance(1_000)
    group = c.coord.share_groups["sg"]
    assert list(group.members) == ["m2"]
    assert group.members["m2"].current.assigned == (("id-orders", (0, 1)),)


def test_kip932_leave_with_epoch_minus_one_empties_the_group():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    r = hb(c, "m1", -1).response
    assert r.member_epoch == -1
    assert c.coord.share_groups["sg"].state().value == "Empty"
    listed = c.call(c.coord.list_groups, ListGroupsRequest(types_filter=("share",))).response
    assert [(g.group_id, g.group_type, g.state) for g in listed] == [("sg", "share", "Empty")]


def test_kip932_only_a_member_of_the_share_group_may_open_a_share_session():
    c = ctx()
    share = c.coord.share
    assert share.membership("sg", "m1") is ErrorCode.GROUP_ID_NOT_FOUND
    hb(c, "m1", 0, ("orders",))
    assert share.membership("sg", "m1") is ErrorCode.NONE
    assert share.membership("sg", "ghost") is ErrorCode.UNKNOWN_MEMBER_ID
    hb(c, "m1", -1)
    assert share.membership("sg", "m1") is ErrorCode.UNKNOWN_MEMBER_ID
    c.join("classic")
    assert share.membership("classic", "m1") is ErrorCode.GROUP_ID_NOT_FOUND


def test_kip932_share_group_and_other_kinds_do_not_mix():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    assert c.join("sg").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert c.cg_heartbeat("m9", 0, group="sg", topics=["orders"]).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert c.commit("sg", "m1", 1, {("orders", 0): 5}).error is ErrorCode.GROUP_ID_NOT_FOUND
    c.join_new("classic")
    assert hb(c, "m1", 0, ("orders",), group="classic").error is ErrorCode.GROUP_ID_NOT_FOUND


def test_kip932_share_state_writes_are_fenced_by_the_state_epoch():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    write = lambda epoch, start: c.call(c.coord.write_share_state, WriteShareStateRequest(  # noqa: E731
        "sg", "orders-id", 0, ShareStateValue(epoch, start)))
    assert write(0, 5).raised is None
    assert hb(c, "m1", -1).error is ErrorCode.NONE
    alter = c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest("sg", (("orders-id", 0, 42),)))
    assert alter.raised is None
    assert write(0, 6).raised is ErrorCode.FENCED_STATE_EPOCH   # the running partition must reload
    assert write(1, 43).raised is None
    described = c.call(c.coord.describe_share_offsets, DescribeShareOffsetsRequest("sg", None)).response
    assert [(o.topic_id, o.partition, o.start_offset) for o in described.offsets] == [("orders-id", 0, 43)]


def test_kip932_share_state_writes_of_a_replaced_partition_leader_are_fenced():
    """Kafka's share coordinator keeps the newest leader epoch a share partition's state was
    written with and refuses an older one (FENCED_LEADER_EPOCH): a leader another node has
    replaced cannot overwrite what the new leader wrote. A write naming no leader epoch (-1)
    is not checked; the kept epoch survives a replay of the log."""
    c = ctx()
    write = lambda start, leader: c.call(c.coord.write_share_state, WriteShareStateRequest(  # noqa: E731
        "sg", "orders-id", 0, ShareStateValue(0, start), leader_epoch=leader))
    key = ShareStateKey("sg", "orders-id", 0)
    assert write(5, 1).raised is None
    assert write(6, 2).raised is None                               # the partition moved: a new leader
    assert write(7, 1).raised is ErrorCode.FENCED_LEADER_EPOCH      # the old one, paused meanwhile
    assert c.call(c.coord.read_share_state, key).response == ShareStateValue(0, 6, leader_epoch=2)
    assert write(8, -1).raised is None
    assert c.call(c.coord.read_share_state, key).response == ShareStateValue(0, 8, leader_epoch=2)
    fresh = GroupCoordinatorShard(CONFIG)
    for record in c.log:
        fresh.replay(record)
    assert fresh.stored.share_states == c.coord.stored.share_states


def test_kip932_initialize_share_group_state_needs_a_newer_state_epoch_and_delete_forgets_the_state():
    """The persister's InitializeShareGroupState replaces a state only with a newer state
    epoch; DeleteShareGroupState forgets it (and is a no-op without one)."""
    c = ctx()
    init = lambda epoch, start: c.call(c.coord.write_share_state, WriteShareStateRequest(  # noqa: E731
        "sg", "orders-id", 0, ShareStateValue(epoch, start), initialize=True))
    key = ShareStateKey("sg", "orders-id", 0)
    assert init(0, 5).raised is None
    assert init(0, 9).raised is ErrorCode.FENCED_STATE_EPOCH
    assert init(2, 9).raised is None
    assert c.call(c.coord.read_share_state, key).response == ShareStateValue(2, 9)
    assert c.call(c.coord.delete_share_state, key).raised is None
    assert c.call(c.coord.read_share_state, key).response is None
    assert c.call(c.coord.delete_share_state, key).raised is None


def test_kip932_altering_offsets_needs_an_empty_group_and_delete_groups_removes_the_state():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    alter = c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest("sg", (("orders-id", 0, 1),)))
    assert alter.raised is ErrorCode.NON_EMPTY_GROUP
    hb(c, "m1", -1)
    c.call(c.coord.write_share_state, WriteShareStateRequest("sg", "orders-id", 1, ShareStateValue(0, 9)))
    deleted = c.call(c.coord.delete_groups, ("sg",)).response
    assert [d.error for d in deleted] == [ErrorCode.NONE]
    assert "sg" not in c.coord.share_groups and "sg" not in c.coord.stored.share_states


def test_kip932_replaying_the_log_rebuilds_share_groups_and_their_state():
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    hb(c, "m2", 0, ("orders",))
    c.call(c.coord.write_share_state, WriteShareStateRequest("sg", "orders-id", 0, ShareStateValue(0, 7)))
    fresh = GroupCoordinatorShard(CONFIG)
    for record in c.log:
        fresh.replay(record)
    assert fresh.share_groups == c.coord.share_groups
    assert fresh.stored.share_states == c.coord.stored.share_states
    snap = GroupCoordinatorShard(CONFIG)
    for record in c.coord.snapshot_records():
        snap.replay(record)
    assert snap.share_groups == c.coord.share_groups
    assert snap.stored.share_states == c.coord.stored.share_states


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(1, 8), st.integers(0, 3))
def test_kip932_the_simple_share_assignor_gives_every_partition_and_balances_members(members, count, rotation):
    ids = [f"m{i:02d}" for i in range(members)]
    spec = GroupSpec({m: MemberSpec(m, frozenset({"t"})) for m in ids})
    result = SimpleShareAssignor().assign(spec, {"t": count})
    per_member = [len(result[m].get("t", ())) for m in ids]
    owned = [p for m in ids for p in result[m].get("t", ())]
    assert set(owned) == set(range(count)), "a partition has no member"
    assert max(per_member) - min(per_member) <= 1
    if members > count:
        sharing = [owned.count(p) for p in range(count)]
        assert max(sharing) - min(sharing) <= 1 and min(per_member) == 1
    else:
        assert sorted(owned) == list(range(count)), "a partition has two members while others have none"


def test_kip932_a_topic_stays_initialized_while_nobody_subscribes_to_it():
    # Kafka 4.4 keeps a share group's initialized topics (ShareGroupStatePartitionMetadata):
    # after the last member left, a new one is given the topic's partitions at once, with no
    # initialization step (and no epoch bump for it).
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    c.advance(0)                                   # initialized: epoch 3
    group = c.coord.share_groups["sg"]
    assert set(group.initialized) == {"id-orders"}
    assert hb(c, "m1", -1).error is ErrorCode.NONE  # the group is empty: epoch 4
    r = hb(c, "m2", 0, ("orders",)).response
    assert r.member_epoch == 5 and sorted(partitions(r)) == [0, 1]
    c.advance(0)
    assert c.coord.share_groups["sg"].epoch == 5   # nothing left to initialize
    # A snapshot keeps it; the topic's deletion ends it (and its offsets).
    assert any(type(rec).__name__ == "ShareInitRecord" for rec in c.coord.snapshot_records())
    c.set_topics()
    assert c.coord.share_groups["sg"].initialized == {}


def test_kip932_a_topic_altered_whole_is_initialized_and_assigned_at_the_first_join():
    # Kafka 4.4 marks the topics AlterShareGroupOffsets sets as initialized, and makes a new
    # group at epoch 1: the first member's join (epoch 2) is given every partition at once.
    c = ctx()
    altered = c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest(
        "sg", (("id-orders", 0, 0), ("id-orders", 1, 0))))
    assert altered.raised is None
    group = c.coord.share_groups["sg"]
    assert (group.epoch, group.target_epoch, set(group.initialized)) == (1, 1, {"id-orders"})
    r = hb(c, "m1", 0, ("orders",)).response
    assert r.member_epoch == 2 and sorted(partitions(r)) == [0, 1]


def test_kip932_partitions_altered_alone_are_assigned_at_once_and_the_rest_once_initialized():
    # Kafka 4.4 marks the partitions AlterShareGroupOffsets sets as initialized, and assigns
    # only initialized partitions: a join is given the altered one at once, the other once
    # its share state is initialized (an epoch later).
    c = ctx()
    assert c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest("sg", (("id-orders", 1, 0),))).raised is None
    assert c.coord.share_groups["sg"].initialized["id-orders"].partitions == frozenset({1})
    r = hb(c, "m1", 0, ("orders",)).response
    assert r.member_epoch == 2 and sorted(partitions(r)) == [1]
    c.advance(0)
    assert c.coord.share_groups["sg"].initialized["id-orders"].covers(2)
    r = hb(c, "m1", 2).response
    assert r.member_epoch == 3 and sorted(partitions(r)) == [0, 1]


def _grown_to_four(c: GroupContext):
    """m1 holds both partitions of orders; orders grows to four and m1 heartbeats: (its
    epoch before the growth, the answer)."""
    hb(c, "m1", 0, ("orders",))
    c.advance(0)
    epoch = hb(c, "m1", c.coord.share_groups["sg"].members["m1"].epoch).response.member_epoch
    c.set_topics(orders=4)
    return epoch, hb(c, "m1", epoch).response


def test_kip932_a_topic_that_grows_keeps_its_initialized_partitions_assigned():
    # Kafka 4.4 assigns a share group's initialized partitions only: when a subscribed topic
    # grows, the old partitions stay with their member (the new metadata is an epoch) and the
    # new ones come once initialized (another epoch).
    c = ctx()
    epoch, r = _grown_to_four(c)
    assert r.member_epoch == epoch + 1
    assert c.coord.share_groups["sg"].target["m1"] == (("id-orders", (0, 1)),)
    c.advance(0)
    r = hb(c, "m1", r.member_epoch).response
    assert r.member_epoch == epoch + 2 and sorted(partitions(r)) == [0, 1, 2, 3]


def test_kip932_an_initialization_cut_short_by_a_restart_runs_after_the_load():
    # The new partitions of a grown topic were to be initialized right after the heartbeat
    # that saw them; the coordinator restarted first. Its member's heartbeats are steady
    # (at the group's epoch, holding its target), so the load itself must start it again.
    from kgroup.core.coordinator import GroupCoordinatorShard
    c = ctx()
    epoch = _grown_to_four(c)[1].member_epoch
    topics = dict(c.coord.shard.topics)
    c.reload(GroupCoordinatorShard(c.config))
    c.apply(c.coord.update_topics(topics, c.now))
    c.apply(c.coord.load_complete(c.now))
    assert c.coord.share_groups["sg"].target["m1"] == (("id-orders", (0, 1)),)
    c.advance(0)
    r = hb(c, "m1", epoch).response
    assert r.member_epoch == epoch + 1 and sorted(partitions(r)) == [0, 1, 2, 3]


def test_kip932_a_known_member_rejoining_keeps_its_epoch_and_its_previous_one():
    # Kafka 4.4 steps a rejoining member (epoch 0) on from where it stands: with nothing
    # changed it keeps its epoch, and a heartbeat at the epoch before is still answered.
    c = ctx()
    hb(c, "m1", 0, ("orders",))
    c.advance(0)
    hb(c, "m2", 0, ("orders",))
    epoch = hb(c, "m1", c.coord.share_groups["sg"].members["m1"].epoch).response.member_epoch
    previous = c.coord.share_groups["sg"].members["m1"].current.previous_member_epoch
    assert previous < epoch
    r = hb(c, "m1", 0, ("orders",)).response
    assert r.member_epoch == epoch and r.assignment is not None
    assert hb(c, "m1", previous).error is ErrorCode.NONE


def test_kip932_the_simple_share_assignor_is_sticky_when_a_member_leaves_or_joins():
    # Kafka 4.4's SimpleAssignor starts from the current targets: a member that leaves hands
    # on only what it held; a member that joins takes only what the others must give up.
    def assign(members, held):
        spec = GroupSpec({m: MemberSpec(m, frozenset({"t"}), assignment=held.get(m, {})) for m in members})
        return SimpleShareAssignor().assign(spec, {"t": 12})
    first = assign(["a", "b", "c", "d"], {})
    after_leave = assign(["a", "b", "c"], first)
    for m in ("a", "b", "c"):
        assert set(first[m]["t"]) <= set(after_leave[m]["t"]), (m, first, after_leave)
    after_join = assign(["a", "b", "c", "e"], after_leave)
    kept = sum(len(set(after_leave[m]["t"]) & set(after_join[m]["t"])) for m in ("a", "b", "c"))
    assert kept == 12 - len(after_join["e"]["t"]) and len(after_join["e"]["t"]) == 3


def test_share_records_round_trip_through_the_log_codec():
    from kgroup.core import record_codec
    from kgroup.core.records import (
        ShareCurrentRecord, ShareCurrentValue, ShareGroupEpochRecord, ShareMemberRecord, ShareMemberValue,
        InitializedTopic, ShareInitRecord, ShareStateBatch, ShareStateRecord, ShareTargetEpochRecord,
        ShareTargetRecord,
    )

    records = [
        ShareGroupEpochRecord("sg", 3, (("orders", "id-orders", 2),)), ShareGroupEpochRecord("sg", None),
        ShareMemberRecord("sg", "m1", ShareMemberValue("rack", "cid", "/h", ("orders",))),
        ShareMemberRecord("sg", "m1", None),
        ShareTargetRecord("sg", "m1", (("id-orders", (0, 1)),)), ShareTargetRecord("sg", "m1", None),
        ShareTargetEpochRecord("sg", 3), ShareTargetEpochRecord("sg", None),
        ShareCurrentRecord("sg", "m1", ShareCurrentValue(3, 2, (("id-orders", (1,)),))),
        ShareCurrentRecord("sg", "m1", None),
        ShareInitRecord("sg", "id-orders", InitializedTopic("orders", frozenset({0, 1}))),
        ShareInitRecord("sg", "id-orders", InitializedTopic("orders", frozenset({0, 2, 3, 7}))),
        ShareInitRecord("sg", "id-orders", None),
        ShareStateRecord("sg", "id-orders", 1, ShareStateValue(2, 40, (ShareStateBatch(40, 49, 2, 1),))),
        ShareStateRecord("sg", "id-orders", 1, ShareStateValue(2, 40, (ShareStateBatch(40, 49, 2, 1),), 7)),
        ShareStateRecord("sg", "id-orders", 1, None),
    ]
    for record in records:
        assert record_codec.decode(record_codec.encode(record)) == record
    # A state written before leader epochs were kept reads back with none (-1), and one
    # without a leader epoch is written as it always was.
    plain = record_codec.encode(records[-3])
    assert plain.endswith(b"[2,40,[[40,49,2,1]]]")
    assert record_codec.decode(plain).value.leader_epoch == -1
    # Initialized partitions are written as runs; a bare count, as written before partial
    # initialization was kept, reads as every partition up to it.
    runs = record_codec.encode(records[-5])
    assert runs.endswith(b'["orders",[[0,0],[2,3],[7,7]]]')
    old = runs[:-len(b'["orders",[[0,0],[2,3],[7,7]]]')] + b'["orders",3]'
    assert record_codec.decode(old).value.partitions == frozenset({0, 1, 2})
    # A malformed value is refused, never expanded into billions of partitions.
    for bad in (b'["orders",[[0,10000000000]]]', b'["orders",[[5,2]]]', b'["orders",-3]'):
        with pytest.raises(record_codec.RecordDecodeError):
            record_codec.decode(runs[:-len(b'["orders",[[0,0],[2,3],[7,7]]]')] + bad)
    payload = record_codec.encode(records[-2])
    for cut in (4, len(payload) - 3):
        try:
            record_codec.decode(payload[:cut])
        except record_codec.RecordDecodeError:
            pass


def test_kip932_share_groups_emit_group_events_like_the_other_kinds():
    c = ctx()

    def step(member: str, epoch: int, topics=None) -> list[tuple]:
        result = c.coord.share_group_heartbeat(
            ShareGroupHeartbeatRequest("sg", member, epoch, subscribed_topic_names=topics), "reply", c.now)
        for record in result.records:
            c.coord.replay(record)
        return [(e.kind.value, e.member, e.state) for e in result.events]

    first = step("m1", 0, ("orders",))
    assert ("member_joined", "m1", "Stable") in first
    from kgroup.core.timers import TimerKind, TimerOp
    for record in c.coord.share.topics_initialized(TimerOp(TimerKind.SHARE_INIT, "sg"), c.now).records:
        c.coord.replay(record)
    assert ("assignment_changed", "m1", "Stable") in step("m1", 2)
    assert ("member_joined", "m2", "Stable") in step("m2", 0, ("orders",))
    assert ("member_left", "m1", "Stable") in step("m1", -1)
    assert ("member_left", "m2", "Empty") in step("m2", -1)


def test_kip932_share_group_configs_default_to_the_broker_and_a_groups_own_values_win():
    import pytest

    c = ctx()
    configs = c.coord.share.configs
    assert configs.limits("sg") == configs.limits("other")
    assert (configs.session_timeout("sg"), configs.auto_offset_reset("sg")) == (10_000, "latest")
    # A group's dynamic configs (the group-metadata log's GroupConfigRecord, replayed into
    # stored.group_configs) win over the broker's [group] share_* defaults.
    c.coord.stored.group_configs["sg"] = (("share.delivery.count.limit", "3"),
                                         ("share.record.lock.duration.ms", "5000"))
    assert (configs.limits("sg").delivery_limit, configs.limits("sg").record_lock_ms) == (3, 5_000)
    assert configs.limits("other").delivery_limit == 5
    with pytest.raises(ValueError, match="share_delivery_count_limit"):
        GroupConfig(share_delivery_count_limit=1)
    with pytest.raises(ValueError, match="share_auto_offset_reset"):
        GroupConfig(share_auto_offset_reset="sometimes")
    assert GroupConfig(share_record_lock_duration_ms=5_000).share_record_lock_duration_ms == 5_000


def test_kip932_a_heartbeat_past_epoch_zero_to_a_group_that_does_not_exist_is_group_id_not_found():
    c = ctx()
    assert hb(c, "ghost", 1, group="nowhere").error is ErrorCode.GROUP_ID_NOT_FOUND
    assert "nowhere" not in c.coord.share_groups


def test_kip932_offsets_of_a_share_group_that_does_not_exist_as_kafka_answers_them():
    """Described: no offsets and no error. Altered: the group is made, empty, with its state.
    A group id of another kind is not a share group."""
    c = ctx()
    described = c.call(c.coord.describe_share_offsets,
                       DescribeShareOffsetsRequest("nowhere", (("orders-id", 0),))).response
    assert described.error is ErrorCode.NONE
    assert [(o.topic_id, o.partition, o.start_offset) for o in described.offsets] == [("orders-id", 0, -1)]
    assert "nowhere" not in c.coord.share_groups
    altered = c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest("nowhere", (("orders-id", 0, 7),)))
    assert altered.raised is None
    assert c.coord.share_groups["nowhere"].members == {} and c.coord.share_groups["nowhere"].epoch == 1  # as Kafka 4.4
    described = c.call(c.coord.describe_share_offsets, DescribeShareOffsetsRequest("nowhere", None)).response
    assert [(o.topic_id, o.partition, o.start_offset) for o in described.offsets] == [("orders-id", 0, 7)]
    assert hb(c, "m1", 0, ("orders",), group="nowhere").response.member_epoch == 2
    c.join_new("classic")
    refused = c.call(c.coord.alter_share_offsets, AlterShareOffsetsRequest("classic", (("orders-id", 0, 1),)))
    assert refused.raised is ErrorCode.GROUP_ID_NOT_FOUND and "classic" not in c.coord.share_groups


def test_kip932_a_heartbeat_is_checked_member_id_first_then_group_id_then_epoch_as_kafka_does():
    c = ctx()
    # An empty member id is refused without a message, even with an empty group id.
    with pytest.raises(GroupError) as refused:
        c.coord.share.validate(ShareGroupHeartbeatRequest("", "", 0))
    assert (refused.value.code, refused.value.message or None) == (ErrorCode.INVALID_REQUEST, None)
    assert hb(c, "m", 0, group="").error is ErrorCode.INVALID_REQUEST
    # An epoch below -1 is a malformed request, before the group is looked for.
    assert hb(c, "m" * 22, -2, group="nowhere").error is ErrorCode.INVALID_REQUEST
