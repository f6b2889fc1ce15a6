"""Scenario tests for offsets and the admin APIs (DescribeGroups, ListGroups, DeleteGroups)."""

from __future__ import annotations

import struct

import pytest

from kgroup.core.classic_group import ClassicGroupState as S
from kgroup.core.config import GroupConfig
from kgroup.core.errors import ErrorCode as E
from kgroup.core.records import ClassicGroupRecord, OffsetCommitRecord

from tests.unit.core.groupctx import GroupContext


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 bytes for the given topics."""
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


# ---- OffsetCommit -------------------------------------------------------------------------

def test_member_commit_is_fenced_by_generation_and_member():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    assert ctx.commit("g", a, 1, {("t", 0): 5}).response.partitions[0].error is E.NONE
    assert ctx.commit("g", a, 0, {("t", 0): 6}).error is E.ILLEGAL_GENERATION
    assert ctx.commit("g", "ghost", 1, {("t", 0): 6}).error is E.UNKNOWN_MEMBER_ID
    assert ctx.committed() == {("t", 0): 5}


def test_commit_with_a_fenced_instance_id_is_rejected():
    ctx = GroupContext()
    s0, s1 = ctx.stable_group(2, static=True)
    assert ctx.commit("g", s0, 1, {("t", 0): 1}, instance="instance-1").error is E.FENCED_INSTANCE_ID


def test_commit_during_completing_rebalance_gets_rebalance_in_progress():
    ctx = GroupContext()
    joins = [ctx.join_new(), ctx.join_new()]
    ctx.run_until(lambda: all(j.done for j in joins))
    member = joins[0].response.member_id
    assert ctx.commit("g", member, 1, {("t", 0): 1}).error is E.REBALANCE_IN_PROGRESS


def test_simple_commit_with_generation_minus_one_creates_an_empty_group():
    ctx = GroupContext()
    done = ctx.commit("manual", "", -1, {("t", 0): 42, ("t", 1): 7})
    assert [p.error for p in done.response.partitions] == [E.NONE, E.NONE]
    assert ctx.committed("manual") == {("t", 0): 42, ("t", 1): 7}
    listed = {g.group_id: g for g in ctx.list_groups()}
    assert listed["manual"].state == "Empty" and listed["manual"].protocol_type == ""


def test_simple_commit_to_a_group_with_members_is_rejected():
    ctx = GroupContext()
    ctx.stable_group(1)
    assert ctx.commit("g", "", -1, {("t", 0): 1}).error is E.UNKNOWN_MEMBER_ID


def test_member_commit_to_a_missing_group_is_rejected():
    ctx = GroupContext()
    assert ctx.commit("g", "m", 3, {("t", 0): 1}).error is E.ILLEGAL_GENERATION
    assert ctx.commit("g", "m", 3, {("t", 0): 1}, version=9).error is E.GROUP_ID_NOT_FOUND


def test_metadata_over_the_limit_fails_only_that_partition():
    ctx = GroupContext(GroupConfig(offset_metadata_max_bytes=4))
    ok = ctx.commit("g", "", -1, {("t", 0): 1}, metadata="four")
    big = ctx.commit("g", "", -1, {("t", 1): 1}, metadata="fiver")
    assert ok.response.partitions[0].error is E.NONE
    assert big.response.partitions[0].error is E.OFFSET_METADATA_TOO_LARGE
    assert ctx.committed() == {("t", 0): 1}


def test_commit_keeps_a_member_alive():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    for _ in range(4):
        ctx.advance(5_000)
        ctx.heartbeat("g", a, 1)
        ctx.commit("g", b, 1, {("t", 0): 1})
    assert b in ctx.group().members and ctx.group().state is S.STABLE


# ---- OffsetFetch --------------------------------------------------------------------------

def test_fetch_listed_partitions_returns_minus_one_when_none_committed():
    ctx = GroupContext()
    ctx.commit("g", "", -1, {("t", 0): 10})
    fetched = ctx.fetch("g", [("t", 0), ("t", 1), ("u", 0)]).response.partitions
    assert [(f.topic, f.partition, f.offset) for f in fetched] == [("t", 0, 10), ("t", 1, -1), ("u", 0, -1)]
    missing = ctx.fetch("nobody", [("t", 0)]).response.partitions
    assert missing[0].offset == -1 and missing[0].error is E.NONE


def test_fetch_all_partitions_of_a_group():
    ctx = GroupContext()
    ctx.commit("g", "", -1, {("b", 1): 2, ("a", 0): 1}, metadata="m")
    fetched = ctx.fetch("g").response.partitions
    assert [(f.topic, f.partition, f.offset, f.metadata) for f in fetched] == [("a", 0, 1, "m"), ("b", 1, 2, "m")]
    assert ctx.fetch("nobody").response.partitions == ()


# ---- OffsetDelete -------------------------------------------------------------------------

def test_offset_delete_refuses_topics_the_group_subscribes_to():
    ctx = GroupContext()
    a, = ctx.stable_group(1, protocols=(("range", subscription("orders")),))
    ctx.commit("g", a, 1, {("orders", 0): 5, ("old", 0): 3})
    deleted = ctx.delete_offsets("g", [("orders", 0), ("old", 0)])
    assert [p.error for p in deleted.response.partitions] == [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE]
    assert ctx.committed() == {("orders", 0): 5}


def test_offset_delete_on_an_empty_group_and_missing_group():
    ctx = GroupContext()
    ctx.commit("g", "", -1, {("t", 0): 5})
    assert ctx.delete_offsets("g", [("t", 0)]).response.partitions[0].error is E.NONE
    assert ctx.committed() == {}
    assert ctx.delete_offsets("nobody", [("t", 0)]).error is E.GROUP_ID_NOT_FOUND


def test_offset_delete_on_a_non_consumer_group_with_members():
    ctx = GroupContext()
    ctx.stable_group(1, protocol_type="connect")
    assert ctx.delete_offsets("g", [("t", 0)]).error is E.NON_EMPTY_GROUP


# ---- retention ----------------------------------------------------------------------------

RETENTION = GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=500)


def test_offset_expiry_boundary_for_a_simple_group():
    ctx = GroupContext(RETENTION)
    ctx.commit("g", "", -1, {("t", 0): 1})
    ctx.advance(59_999)
    assert ctx.committed() == {("t", 0): 1}
    ctx.advance(1)                                      # exactly the retention
    assert ctx.committed() == {}
    assert OffsetCommitRecord("g", "t", 0, None) in ctx.log


def test_offsets_of_an_empty_group_expire_retention_after_it_became_empty():
    ctx = GroupContext(RETENTION)
    a, = ctx.stable_group(1)
    ctx.commit("g", a, 1, {("t", 0): 9})
    ctx.advance_alive(100_000, [a], generation=1)       # long past the commit's retention
    assert ctx.committed() == {("t", 0): 9}             # a live classic group keeps offsets
    ctx.leave("g", a)
    emptied = ctx.now
    ctx.advance(60_000 - 1 - (ctx.now - emptied))
    assert ctx.committed() == {("t", 0): 9}
    ctx.advance(1)
    assert ctx.committed() == {}
    assert "g" not in ctx.coord.groups                  # Empty and no offsets: deleted
    assert ClassicGroupRecord("g", None) in ctx.log


def test_stable_consumer_group_expires_only_offsets_of_unsubscribed_topics():
    ctx = GroupContext(RETENTION)
    a, = ctx.stable_group(1, protocols=(("range", subscription("live")),))
    ctx.commit("g", a, 1, {("live", 0): 1, ("gone", 0): 2})
    ctx.advance_alive(60_000, [a], generation=1)
    assert ctx.committed() == {("live", 0): 1}


def test_default_retention_is_seven_days():
    # offsets.retention.minutes defaults to 10080 (7 days); the check runs every 10 minutes,
    # and 7 days is a whole number of checks, so the boundary falls on a check.
    ctx = GroupContext()
    ctx.commit("g", "", -1, {("t", 0): 1})
    ctx.advance(7 * 24 * 60 * 60 * 1000 - 1)
    assert ctx.committed() == {("t", 0): 1}
    ctx.advance(1)
    assert ctx.committed() == {}


def test_commit_with_explicit_retention_expires_at_its_own_time():
    ctx = GroupContext(RETENTION)
    ctx.commit("g", "", -1, {("t", 0): 1}, retention_ms=1_000)
    ctx.advance(1_000)
    assert ctx.committed() == {}


# ---- DescribeGroups / ListGroups / DeleteGroups -------------------------------------------

def test_describe_shows_metadata_only_when_stable_and_the_last_assignment_always():
    ctx = GroupContext()
    a, b = ctx.stable_group(2)
    (stable,) = ctx.describe("g")
    assert stable.state == "Stable" and stable.protocol == "range" and stable.protocol_type == "consumer"
    assert [(m.member_id, m.metadata, m.assignment) for m in stable.members] == [
        (a, b"meta", f"assignment-of-{a}".encode()), (b, b"meta", f"assignment-of-{b}".encode())]
    ctx.join(member=a)
    (rebalancing,) = ctx.describe("g")
    assert rebalancing.state == "PreparingRebalance" and rebalancing.protocol == ""
    # Kafka's describeNoMetadata: no metadata, but the last assignment stays visible.
    assert [(m.metadata, m.assignment) for m in rebalancing.members] == [
        (b"", f"assignment-of-{a}".encode()), (b"", f"assignment-of-{b}".encode())]


def test_describe_missing_group_is_dead_or_not_found():
    ctx = GroupContext()
    (old,) = ctx.describe("nope")
    assert old.state == "Dead" and old.error is E.NONE
    (new,) = ctx.describe("nope", missing_as_error=True)
    assert new.error is E.GROUP_ID_NOT_FOUND and new.error_message == "Group nope not found."
    assert old.error_message is None


def test_list_groups_filters_by_state_and_type_case_insensitively():
    ctx = GroupContext()
    ctx.stable_group(1, group="busy")
    ctx.commit("idle", "", -1, {("t", 0): 1})
    assert sorted(g.group_id for g in ctx.list_groups()) == ["busy", "idle"]
    assert [g.group_id for g in ctx.list_groups(states=["stable"])] == ["busy"]
    assert [g.group_id for g in ctx.list_groups(states=["EMPTY"])] == ["idle"]
    assert [g.group_type for g in ctx.list_groups(types=["Classic"])] == ["classic", "classic"]
    assert ctx.list_groups(types=["consumer"]) == ()


def test_delete_groups_removes_empty_groups_with_their_offsets():
    ctx = GroupContext()
    ctx.stable_group(1, group="busy")
    ctx.commit("idle", "", -1, {("t", 0): 1})
    results = {r.group_id: r.error for r in ctx.delete_groups("busy", "idle", "nope", "")}
    # The empty group id is looked up as any other (Kafka keeps it for old clients).
    assert results == {"busy": E.NON_EMPTY_GROUP, "idle": E.NONE, "nope": E.GROUP_ID_NOT_FOUND,
                       "": E.GROUP_ID_NOT_FOUND}
    assert ctx.committed("idle") == {} and "idle" not in ctx.coord.groups
    assert "idle" not in ctx.coord.stored.offsets


@pytest.mark.parametrize("n", [1, 3])
def test_offsets_survive_a_restart(n):
    ctx = GroupContext()
    members = ctx.stable_group(n)
    ctx.commit("g", members[0], 1, {("t", p): 100 + p for p in range(n)})
    fresh = GroupContext()
    for record in ctx.log:
        fresh.coord.replay(record)
    assert fresh.coord.stored == ctx.coord.stored
    assert fresh.committed() == {("t", p): 100 + p for p in range(n)}
