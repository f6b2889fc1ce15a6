"""KIP-1191 in the share-partition core, on a manual clock: the offsets archived because a
member rejected them or because they reached the delivery limit are noted as dead letters
(offset, delivery count, why); nothing else archived is."""

from __future__ import annotations

from kgroup.core.share_partition import (
    AckBatch,
    AckType,
    DeadLetter,
    DeadLetterReason,
    LogBatch,
    RecordState,
    ShareLimits,
    SharePartition,
)
from kgroup.core.records import ShareStateBatch

LIMITS = ShareLimits(record_lock_ms=5_000, delivery_limit=2, max_in_flight=100)
REJECTED, OVER = DeadLetterReason.REJECTED, DeadLetterReason.DELIVERY_LIMIT


def ack(first: int, last: int, kind: AckType) -> AckBatch:
    return AckBatch(first, last, (int(kind),))


def test_kip1191_rejected_offsets_are_dead_letters_accepted_and_gaps_are_not():
    sp = SharePartition(0, limits=LIMITS)
    sp.acquire("a", [LogBatch(0, 4)], 100, now_ms=0)
    assert sp.acknowledge("a", [ack(0, 0, AckType.ACCEPT), ack(1, 2, AckType.REJECT), ack(3, 3, AckType.GAP)],
                          now_ms=1).name == "NONE"
    assert sp.take_dead_letters() == [DeadLetter(1, 1, REJECTED), DeadLetter(2, 1, REJECTED)]
    assert sp.take_dead_letters() == []                  # taken once
    assert sp.start == 4


def test_kip1191_release_at_the_delivery_limit_is_a_dead_letter():
    sp = SharePartition(0, limits=LIMITS)
    sp.acquire("a", [LogBatch(0, 1)], 100, now_ms=0)
    sp.acknowledge("a", [ack(0, 1, AckType.RELEASE)], now_ms=1)
    assert sp.take_dead_letters() == []                  # delivered once of two
    sp.acquire("a", [LogBatch(0, 1)], 100, now_ms=2)
    sp.acknowledge("a", [ack(0, 0, AckType.RELEASE), ack(1, 1, AckType.REJECT)], now_ms=3)
    assert sp.take_dead_letters() == [DeadLetter(0, 2, OVER), DeadLetter(1, 2, REJECTED)]
    assert sp.start == 2


def test_kip1191_a_lock_running_out_or_a_member_leaving_at_the_limit_is_a_dead_letter():
    sp = SharePartition(0, limits=LIMITS)
    for now in (0, 10_000):                              # two deliveries, each lock runs out
        sp.acquire("a", [LogBatch(0, 0)], 100, now_ms=now)
    assert sp.expire(20_000)
    assert sp.take_dead_letters() == [DeadLetter(0, 2, OVER)]
    assert sp.counts()[RecordState.ARCHIVED] == 0 and sp.start == 1
    sp.acquire("a", [LogBatch(1, 1)], 100, now_ms=20_000)
    sp.release_member("a")
    assert sp.take_dead_letters() == []                  # once only: back to AVAILABLE
    sp.acquire("b", [LogBatch(1, 1)], 100, now_ms=20_001)
    sp.release_member("b")
    assert sp.take_dead_letters() == [DeadLetter(1, 2, OVER)]


def test_kip1191_an_offset_already_at_a_lowered_limit_is_archived_at_acquisition_as_a_dead_letter():
    sp = SharePartition(0, batches=[ShareStateBatch(0, 1, int(RecordState.AVAILABLE), 3)], limits=LIMITS)
    assert sp.acquire("a", [LogBatch(0, 2)], 100, now_ms=0)[0].first_offset == 2
    assert sp.take_dead_letters() == [DeadLetter(0, 3, OVER), DeadLetter(1, 3, OVER)]


def test_kip1191_transaction_markers_and_aborted_records_are_archived_without_dead_letters():
    sp = SharePartition(0, limits=LIMITS)
    sp.acquire("a", [LogBatch(0, 1, aborted=True), LogBatch(2, 2, control=True), LogBatch(3, 3)], 100, now_ms=0)
    assert sp.take_dead_letters() == [] and sp.start == 3


def test_kip1191_a_refused_acknowledgement_notes_nothing():
    sp = SharePartition(0, limits=LIMITS)
    sp.acquire("a", [LogBatch(0, 1)], 100, now_ms=0)
    assert sp.acknowledge("b", [ack(0, 1, AckType.REJECT)], now_ms=1).name == "INVALID_RECORD_STATE"
    assert sp.take_dead_letters() == []
