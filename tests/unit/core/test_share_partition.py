"""The share-partition state machine (KIP-932) on a manual clock: acquisition, locks,
acknowledgements, the delivery limit, and its durable view."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.core.errors import ErrorCode
from kgroup.core.share_partition import (
    TRANSITIONS,
    AckBatch,
    AcquiredRange,
    AckType,
    IllegalShareTransition,
    LogBatch,
    Move,
    RecordState,
    ShareLimits,
    SharePartition,
    Slot,
)

LIMITS = ShareLimits(record_lock_ms=5_000, delivery_limit=3, max_in_flight=100)
ACCEPT, RELEASE, REJECT, GAP = (int(AckType.ACCEPT),), (int(AckType.RELEASE),), (int(AckType.REJECT),), (int(AckType.GAP),)


def log(*ranges: tuple[int, int]) -> list[LogBatch]:
    return [LogBatch(a, b) for a, b in ranges]


def fresh(start: int = 0) -> SharePartition:
    return SharePartition(start, limits=LIMITS)


def test_kip932_acquire_hands_new_records_to_one_member_with_delivery_count_one():
    sp = fresh()
    assert sp.acquire("a", log((0, 4), (5, 9)), 100, now_ms=0) == [AcquiredRange(0, 9, 1)]
    assert sp.acquire("b", log((0, 4), (5, 9)), 100, now_ms=1) == []   # all held by a
    assert sp.held_by("a") == list(range(10))


def test_kip932_max_records_stops_at_the_end_of_a_batch():
    sp = fresh()
    assert sp.acquire("a", log((0, 4), (5, 9)), 2, now_ms=0) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("b", log((5, 9)), 2, now_ms=0) == [AcquiredRange(5, 9, 1)]


def test_kip932_accept_finishes_records_and_moves_the_start_offset():
    sp = fresh()
    sp.acquire("a", log((0, 9)), 100, 0)
    assert sp.acknowledge("a", [AckBatch(0, 4, ACCEPT)], 10) is ErrorCode.NONE
    assert sp.start == 5
    assert sp.first_to_read(0, 10, 20) is None   # 5..9 still held, nothing new


def test_kip932_release_makes_a_record_available_again_with_the_next_delivery_count():
    sp = fresh()
    sp.acquire("a", log((0, 0)), 100, 0)
    assert sp.acknowledge("a", [AckBatch(0, 0, RELEASE)], 1) is ErrorCode.NONE
    assert sp.acquire("b", log((0, 0)), 100, 2) == [AcquiredRange(0, 0, 2)]


def test_kip932_reject_archives_a_record_for_good():
    sp = fresh()
    sp.acquire("a", log((0, 1)), 100, 0)
    assert sp.acknowledge("a", [AckBatch(0, 0, REJECT), AckBatch(1, 1, GAP)], 1) is ErrorCode.NONE
    assert sp.start == 2
    assert sp.acquire("b", log((0, 1)), 100, 2) == []


def test_kip932_an_expired_lock_makes_the_record_available_to_others():
    sp = fresh()
    sp.acquire("a", log((0, 0)), 100, 0)
    assert sp.acquire("b", log((0, 0)), 100, 4_999) == []
    assert sp.acquire("b", log((0, 0)), 100, 5_000) == [AcquiredRange(0, 0, 2)]
    # The first holder's late acknowledgement is refused: the record is not its any more.
    assert sp.acknowledge("a", [AckBatch(0, 0, ACCEPT)], 5_001) is ErrorCode.INVALID_RECORD_STATE


def test_kip932_a_record_released_at_the_delivery_limit_is_archived():
    sp = fresh()
    for delivery in (1, 2, 3):
        assert sp.acquire("a", log((0, 0)), 100, delivery) == [AcquiredRange(0, 0, delivery)]
        sp.acknowledge("a", [AckBatch(0, 0, RELEASE)], delivery)
    assert sp.acquire("a", log((0, 0)), 100, 10) == []
    assert sp.start == 1


def test_kip932_a_member_that_leaves_releases_what_it_holds():
    sp = fresh()
    sp.acquire("a", log((0, 3)), 100, 0)
    assert sp.release_member("a")
    assert sp.acquire("b", log((0, 3)), 100, 1) == [AcquiredRange(0, 3, 2)]


def test_kip932_acknowledgements_of_a_partition_apply_all_or_none():
    sp = fresh()
    sp.acquire("a", log((0, 4)), 100, 0)
    sp.acquire("b", log((5, 9)), 100, 0)
    # 5 is b's: the whole request is refused and 0..4 stay acquired by a.
    assert sp.acknowledge("a", [AckBatch(0, 5, ACCEPT)], 1) is ErrorCode.INVALID_RECORD_STATE
    assert sp.held_by("a") == [0, 1, 2, 3, 4]
    assert sp.acknowledge("a", [AckBatch(3, 4, ACCEPT), AckBatch(0, 1, ACCEPT)], 1) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 1, (1, 9))], 1) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 4, (1, 2, 3, 1, 1))], 1) is ErrorCode.NONE


def test_acknowledgements_far_outside_the_window_are_refused_without_walking_them():
    far = 2**62
    sp = fresh(start=far)
    sp.acquire("a", log((far, far + 4)), 100, 0)
    assert sp.acknowledge("a", [AckBatch(far, 2**63 - 1, ACCEPT)], 2) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [AckBatch(0, far + 3, ACCEPT)], 2) is ErrorCode.NONE   # below the start: done
    assert sp.held_by("a") == [far + 4]


def test_kip932_the_window_holds_at_most_max_in_flight_records():
    sp = SharePartition(0, limits=ShareLimits(5_000, 3, max_in_flight=4))
    assert sp.acquire("a", log(*((i, i) for i in range(10))), 100, 0) == [AcquiredRange(0, 3, 1)]
    sp.acknowledge("a", [AckBatch(0, 1, ACCEPT)], 1)
    assert sp.acquire("b", log(*((i, i) for i in range(4, 10))), 100, 1) == [AcquiredRange(4, 5, 1)]


def test_kip932_control_batches_are_archived_never_delivered():
    sp = fresh()
    assert sp.acquire("a", [LogBatch(0, 0, control=True), LogBatch(1, 2)], 100, 0) == [AcquiredRange(1, 2, 1)]
    assert sp.start == 1


def test_kip932_records_deleted_by_retention_are_done_with():
    sp = fresh()
    sp.acquire("a", log((0, 4)), 100, 0)
    assert sp.first_to_read(log_start=3, log_end=10, now_ms=1) == 5
    assert sp.start == 3


def test_kip932_durable_view_writes_runs_and_an_acquired_record_as_available():
    sp = fresh()
    sp.acquire("a", log((0, 9)), 100, 0)
    sp.acknowledge("a", [AckBatch(2, 3, ACCEPT), AckBatch(5, 5, REJECT)], 1)
    view = sp.persisted()
    assert view.start_offset == 0
    assert [(b.first_offset, b.last_offset, RecordState(b.state), b.delivery_count) for b in view.batches] == [
        (0, 1, RecordState.AVAILABLE, 0), (2, 3, RecordState.ACKNOWLEDGED, 1), (4, 4, RecordState.AVAILABLE, 0),
        (5, 5, RecordState.ARCHIVED, 1), (6, 9, RecordState.AVAILABLE, 0)]
    # After a restart nothing is acquired, nothing finished comes back.
    loaded = SharePartition.from_persisted(view, LIMITS)
    got = loaded.acquire("b", log((0, 9)), 100, 2)
    assert [o for r in got for o in range(r.first_offset, r.last_offset + 1)] == [0, 1, 4, 6, 7, 8, 9]
    assert {r.delivery_count for r in got} == {1}


def test_kip932_a_delivery_a_broker_crash_cuts_short_is_not_counted():
    """As in Kafka 4.4 (tests/reference/test_share_delivery_counts.py): the state written
    while a record is acquired (a neighbour's acknowledgement) holds the record as it was
    before that delivery, so after the crash it is delivered again with the same count; a
    delivery that ended (released, its lock ran out) counts."""
    sp = fresh()
    sp.acquire("a", log((0, 3)), 100, now_ms=0)
    assert sp.acknowledge("a", [AckBatch(1, 1, RELEASE)], 1) is ErrorCode.NONE   # ended: counts
    assert sp.acquire("a", log((0, 3)), 100, now_ms=2) == [AcquiredRange(1, 1, 2)]
    assert sp.acknowledge("a", [AckBatch(0, 0, ACCEPT)], 3) is ErrorCode.NONE    # written now...
    crashed = SharePartition.from_persisted(sp.persisted(), LIMITS)              # ...then a crash
    assert crashed.acquire("b", log((0, 3)), 100, now_ms=4) == [AcquiredRange(1, 1, 2), AcquiredRange(2, 3, 1)]
    # Crash after crash mid-delivery never reaches the delivery limit (3 here).
    for now in range(5, 5 + 2 * LIMITS.delivery_limit):
        crashed = SharePartition.from_persisted(crashed.persisted(), LIMITS)
        assert crashed.acquire("b", log((0, 3)), 100, now) == [AcquiredRange(1, 1, 2), AcquiredRange(2, 3, 1)]
    # A lock that ran out ended a delivery: it counts, in memory and in what is written.
    later = now + LIMITS.record_lock_ms
    assert not crashed.lapsed
    assert crashed.expire(later)
    assert crashed.lapsed                     # the broker writes it now, as Kafka does
    crashed = SharePartition.from_persisted(crashed.persisted(), LIMITS)
    assert crashed.acquire("b", log((0, 3)), 100, later) == [AcquiredRange(1, 1, 3), AcquiredRange(2, 3, 2)]


def test_an_illegal_move_raises_and_changes_nothing():
    sp = fresh()
    slot = Slot(RecordState.ACKNOWLEDGED, 1)
    with pytest.raises(IllegalShareTransition):
        sp._move(0, slot, Move.RELEASE)
    assert slot.state is RecordState.ACKNOWLEDGED
    # Every move out of ACQUIRED is in the table; finished records have no move at all.
    assert {m for (s, m) in TRANSITIONS if s is RecordState.ACQUIRED} == set(Move) - {Move.ACQUIRE}
    assert not [k for k in TRANSITIONS if k[0] in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)]


# ---- properties ------------------------------------------------------------------------------

MEMBERS = ("a", "b", "c")
step = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.sampled_from([AckType.ACCEPT, AckType.RELEASE,
                                                                         AckType.REJECT])),
    st.tuples(st.just("advance"), st.integers(0, 6_000)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("restart")),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=60))
def test_share_partition_invariants(steps):
    """No offset is held by two members at once; an accepted record is never delivered
    again; no record is delivered more than the limit; the durable view reloads to the
    same window."""
    records = [LogBatch(i, i) for i in range(20)]
    sp = fresh()
    now = 0
    accepted: set[int] = set()
    deliveries: dict[int, int] = {}
    holders: dict[int, str] = {}
    for s in steps:
        if s[0] == "acquire":
            for r in sp.acquire(s[1], records, s[2], now):
                for o in range(r.first_offset, r.last_offset + 1):
                    assert o not in accepted, "an accepted record was delivered again"
                    assert holders.get(o) in (None, s[1]) or sp.slots[o].owner == s[1]
                    deliveries[o] = deliveries.get(o, 0) + 1
                    assert r.delivery_count <= LIMITS.delivery_limit
                    holders[o] = s[1]
        elif s[0] == "ack":
            sp.expire(now)
            held = sp.held_by(s[1])
            if held:
                code = sp.acknowledge(s[1], [AckBatch(o, o, (int(s[2]),)) for o in held], now)
                assert code is ErrorCode.NONE
                if s[2] is AckType.ACCEPT:
                    accepted.update(held)
        elif s[0] == "advance":
            now += s[1]
        elif s[0] == "leave":
            sp.release_member(s[1])
        else:
            view = sp.persisted()
            before = (sp.start, sp.end)
            sp = SharePartition.from_persisted(view, LIMITS)
            # The view carries the start offset of before the last change (as Kafka writes
            # it); the offsets in between are archived in it, so the reload ends where the
            # partition was, and its own view replays to itself.
            assert (sp.start, sp.end) == before
            assert SharePartition.from_persisted(sp.persisted(), LIMITS).persisted() == sp.persisted()
        owners = [(o, sp.slots[o].owner) for o in sp.slots if sp.slots[o].state is RecordState.ACQUIRED]
        assert len({o for o, _ in owners}) == len(owners)
        assert all(owner is not None for _, owner in owners)
        assert all(slot.count <= LIMITS.delivery_limit for slot in sp.slots.values())


def test_a_write_carries_the_start_offset_of_before_the_change_it_writes():
    """Kafka's share partition persists first and moves its start offset after, so what
    DescribeShareGroupOffsets reads trails by one write; the offsets in between are written
    archived and a reload moves past them."""
    sp = fresh()
    sp.acquire("a", [LogBatch(0, 3)], 10, 0)
    sp.acknowledge("a", [AckBatch(0, 1, (int(AckType.ACCEPT),))], 0)
    assert sp.start == 2 and sp.persisted().start_offset == 0
    sp.acknowledge("a", [AckBatch(2, 3, (int(AckType.ACCEPT),))], 0)
    view = sp.persisted()
    assert sp.start == 4 and view.start_offset == 2
    assert SharePartition.from_persisted(view, LIMITS).start == 4


def test_kip932_read_committed_archives_an_aborted_transactions_records_and_never_delivers_them():
    sp = fresh()
    batches = [LogBatch(0, 2), LogBatch(3, 5, aborted=True), LogBatch(6, 6, control=True), LogBatch(7, 9)]
    assert sp.acquire("a", batches, 100, now_ms=0) == [AcquiredRange(0, 2, 1), AcquiredRange(7, 9, 1)]
    assert sp.acknowledge("a", [AckBatch(0, 2, ACCEPT), AckBatch(7, 9, RELEASE)], 1) is ErrorCode.NONE
    assert sp.start == 7                                    # 3..6 finished: archived
    assert sp.acquire("b", batches, 100, now_ms=2) == [AcquiredRange(7, 9, 2)]
    assert sp.acknowledge("b", [AckBatch(3, 3, ACCEPT)], 3) is ErrorCode.NONE   # below the start: done


# ---- KIP-1206 acquire modes and KIP-1222 renew (ShareFetch / ShareAcknowledge v2) ----------------

RENEW = (int(AckType.RENEW),)


def test_kip1206_record_limit_mode_acquires_exactly_max_records_splitting_a_batch():
    sp = fresh()
    assert sp.acquire("a", log((0, 4), (5, 9)), 2, now_ms=0, record_limit=True) == [AcquiredRange(0, 1, 1)]
    # The rest of the batch is left for the next fetch, by any member.
    assert sp.acquire("b", log((0, 4), (5, 9)), 4, now_ms=0, record_limit=True) == [AcquiredRange(2, 5, 1)]
    assert sp.end == 6                                  # nothing past the last acquired offset is in flight
    assert sp.persisted().batches[-1].last_offset == 5


def test_kip1206_batch_optimized_mode_still_finishes_the_batch():
    sp = fresh()
    assert sp.acquire("a", log((0, 4), (5, 9)), 2, now_ms=0, record_limit=False) == [AcquiredRange(0, 4, 1)]


def test_kip1222_renew_extends_the_lock_from_now_without_a_new_delivery():
    sp = fresh()
    sp.acquire("a", log((0, 2)), 100, now_ms=0)              # locks run out at 5_000
    assert sp.acknowledge("a", [AckBatch(0, 2, RENEW)], 4_000, renew=True) is ErrorCode.NONE
    assert sp.renewed_only
    assert sp.next_deadline() == 9_000
    assert not sp.expire(8_999) and sp.held_by("a") == [0, 1, 2]
    assert sp.acquire("b", log((0, 2)), 100, now_ms=8_999) == []  # not redelivered past the original lock
    # The same delivery is then acknowledged: the count never moved.
    assert sp.acknowledge("a", [AckBatch(0, 2, ACCEPT)], 8_999) is ErrorCode.NONE
    assert not sp.renewed_only and sp.start == 3


def test_kip1222_renewed_lock_runs_out_like_any_other():
    sp = fresh()
    sp.acquire("a", log((0, 0)), 100, now_ms=0)
    sp.acknowledge("a", [AckBatch(0, 0, RENEW)], 1_000, renew=True)
    assert sp.expire(6_000)
    assert sp.acquire("b", log((0, 0)), 100, now_ms=6_000) == [AcquiredRange(0, 0, 2)]


def test_kip1222_renew_writes_nothing_durable():
    sp = fresh()
    sp.acquire("a", log((0, 1)), 100, now_ms=0)
    before = sp.persisted()
    sp.acknowledge("a", [AckBatch(0, 1, RENEW)], 10, renew=True)
    assert sp.persisted() == before                     # an acquired record is written as before its delivery


def test_kip1222_renew_needs_is_renew_ack_and_the_group_config():
    sp = fresh()
    sp.acquire("a", log((0, 1)), 100, now_ms=0)
    assert sp.acknowledge("a", [AckBatch(0, 1, RENEW)], 10) is ErrorCode.INVALID_REQUEST   # IsRenewAck false
    off = SharePartition(0, limits=ShareLimits(record_lock_ms=5_000, renew_enabled=False))
    off.acquire("a", log((0, 1)), 100, now_ms=0)
    assert off.acknowledge("a", [AckBatch(0, 1, RENEW)], 10, renew=True) is ErrorCode.INVALID_RECORD_STATE
    assert off.next_deadline() == 5_000                 # refused: nothing changed


def test_kip1222_renew_only_what_the_member_holds_and_mixed_with_accept():
    sp = fresh()
    sp.acquire("a", log((0, 3)), 100, now_ms=0)
    assert sp.acknowledge("b", [AckBatch(0, 0, RENEW)], 10, renew=True) is ErrorCode.INVALID_RECORD_STATE
    per_offset = (int(AckType.ACCEPT), int(AckType.RENEW), int(AckType.RENEW), int(AckType.ACCEPT))
    assert sp.acknowledge("a", [AckBatch(0, 3, per_offset)], 1_000, renew=True) is ErrorCode.NONE
    assert not sp.renewed_only                          # the accepts are written
    assert sp.start == 1 and sp.held_by("a") == [1, 2] and sp.next_deadline() == 6_000
    [run] = [b for b in sp.persisted().batches if b.first_offset <= 3 <= b.last_offset]
    assert run.state == RecordState.ACKNOWLEDGED


def test_kip1206_batch_size_cuts_new_ranges_at_log_batches_and_redelivery_keeps_the_cuts():
    sp = fresh()
    batches = log((0, 1), (2, 4), (5, 6), (7, 7))
    assert sp.acquire("a", batches, 500, now_ms=0, batch_size=2) == [
        AcquiredRange(0, 1, 1), AcquiredRange(2, 4, 1), AcquiredRange(5, 6, 1), AcquiredRange(7, 7, 1)]
    sp.acknowledge("a", [AckBatch(0, 7, RELEASE)], 10)
    assert sp.acquire("b", batches, 500, now_ms=20, batch_size=500) == [
        AcquiredRange(0, 1, 2), AcquiredRange(2, 4, 2), AcquiredRange(5, 6, 2), AcquiredRange(7, 7, 2)]


def test_kip1206_batch_size_larger_than_the_fetch_lists_one_range():
    sp = fresh()
    assert sp.acquire("a", log((0, 1), (2, 4)), 500, now_ms=0, batch_size=500) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("a", log((5, 6)), 500, now_ms=0, batch_size=500) == [AcquiredRange(5, 6, 1)]
