"""The bookkeeping of the member process the cluster tests drive (group_member_process.py):
what it commits is what it read while it owned a partition, never an older position."""

from __future__ import annotations

from tests.integration.group_member_process import Member


def test_a_partition_given_back_is_not_committed_at_what_was_read_before() -> None:
    member = Member("kafka-python", "127.0.0.1:9", "g", "t", "m")
    member.assigned([1, 2], 1)
    member.record(1, 51)
    member.record(2, 55)
    assert member.to_commit() == {1: 52, 2: 56}
    member.revoked([1, 2])                     # others read on to 3,033 and commit that
    member.assigned([1, 2], 3)                 # and hand them back just before it closes
    assert member.to_commit() == {}
    member.record(1, 3033)
    assert member.to_commit() == {1: 3034}


def test_a_lost_partition_is_forgotten_as_a_revoked_one() -> None:
    member = Member("confluent-cooperative", "127.0.0.1:9", "g", "t", "m")
    member.assigned([0, 3], 1)
    member.record(0, 9)
    member.record(3, 4)
    member.revoked([3], "lost")
    member.assigned([3], 2)
    assert member.to_commit() == {0: 10}
