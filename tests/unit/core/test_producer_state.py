"""The producer state of a partition: idempotence, open and aborted transactions, the LSO.

Scenarios (KIP-98 idempotence and markers, KIP-360 epoch bumps) and hypothesis properties
over random sequences of produces, commits, aborts and crash-replays: replaying the log
(from a snapshot or from the start) gives the live state; read_committed never shows a
record of an aborted transaction and shows every committed one below the LSO; the LSO never
passes the first offset of an open transaction.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.errors import ErrorCode as E
from kgroup.core.transactions.producer_state import (
    INT32_MAX,
    BatchInfo,
    PartitionProducers,
    ProducerStateError,
    last_sequence,
)


class Partition:
    """A partition log in memory with its producer state, as the broker drives it."""

    def __init__(self) -> None:
        self.state = PartitionProducers()
        self.log: list[tuple] = []      # ("data", BatchInfo, base, last) | ("marker", pid, epoch, commit, offset)
        self.end = 0

    def produce(self, pid: int, epoch: int, seq: int, count: int = 1, txn: bool = False,
                ts: int = 0) -> int:
        """Append (or deduplicate) one batch; its base offset, or raise ProducerStateError."""
        batch = BatchInfo(pid, epoch, seq, count, txn, ts)
        (verdict,) = self.state.check([batch])
        if verdict is not None:
            return verdict.base_offset
        base, last = self.end, self.end + count - 1
        self.log.append(("data", batch, base, last))
        self.state.append(batch, base, last)
        self.end = last + 1
        return base

    def marker(self, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> int:
        self.state.check_marker(pid, epoch, coordinator_epoch)
        offset = self.end
        self.log.append(("marker", pid, epoch, commit, offset, coordinator_epoch))
        self.state.append_marker(pid, epoch, commit, coordinator_epoch, offset, 0)
        self.end += 1
        return offset

    def rebuilt(self, snapshot_at: int = 0) -> PartitionProducers:
        """The state replayed from the log, after the snapshot taken at entry `snapshot_at`."""
        state = PartitionProducers()
        for entry in self.log[:snapshot_at]:
            replay(state, entry)
        state = PartitionProducers.from_snapshot(json.loads(json.dumps(state.to_snapshot())))
        for entry in self.log[snapshot_at:]:
            replay(state, entry)
        return state

    def read_committed(self) -> list[tuple[int, int]]:
        """(offset, producer id) of each record a read_committed consumer delivers, reading
        batches below the LSO and dropping aborted transactions as the clients do."""
        lso = self.state.last_stable_offset(self.end)
        aborted = sorted(self.state.aborted_between(0, lso), key=lambda a: a.first_offset)
        skipping: set[int] = set()
        out = []
        for entry in self.log:
            if entry[0] == "marker":
                pid, offset = entry[1], entry[4]
                if offset >= lso:
                    break
                skipping.discard(pid)
                continue
            batch, base, last = entry[1], entry[2], entry[3]
            if base >= lso:
                break
            while aborted and aborted[0].first_offset <= base:
                skipping.add(aborted.pop(0).producer_id)
            if batch.transactional and batch.producer_id in skipping:
                continue
            out.extend((o, batch.producer_id) for o in range(base, last + 1))
        return out


def replay(state: PartitionProducers, entry: tuple) -> None:
    if entry[0] == "data":
        state.append(entry[1], entry[2], entry[3])
    else:
        _, pid, epoch, commit, offset, coordinator_epoch = entry
        state.append_marker(pid, epoch, commit, coordinator_epoch, offset, 0)


def refused(fn, *args, **kwargs) -> E:
    with pytest.raises(ProducerStateError) as info:
        fn(*args, **kwargs)
    return info.value.code


# ---- idempotence --------------------------------------------------------------------------


def test_kip98_a_retried_batch_is_answered_with_its_first_offset_and_not_stored_again():
    p = Partition()
    assert p.produce(7, 0, 0, count=3) == 0
    assert p.produce(7, 0, 3, count=2) == 3
    assert p.produce(7, 0, 0, count=3) == 0           # the answer was lost: the client retries
    assert p.produce(7, 0, 3, count=2) == 3
    assert p.end == 5 and len(p.log) == 2


def test_kip98_a_gap_in_sequences_is_out_of_order_and_a_new_epoch_must_start_at_zero():
    p = Partition()
    p.produce(7, 0, 0, count=2)
    assert refused(p.produce, 7, 0, 5) is E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert refused(p.produce, 7, 1, 2) is E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.produce(7, 1, 0) == 2                     # KIP-360: a bumped epoch starts over
    assert refused(p.produce, 7, 0, 2) is E.INVALID_PRODUCER_EPOCH
    assert p.end == 3


def test_kip98_an_unknown_producer_may_start_at_any_sequence_and_sequences_wrap():
    p = Partition()
    p.produce(9, 0, INT32_MAX - 1, count=2)
    assert last_sequence(INT32_MAX - 1, 2) == INT32_MAX
    assert p.produce(9, 0, 0) == 2


def test_kip98_only_the_last_five_batches_are_recognised_as_duplicates():
    p = Partition()
    for seq in range(6):
        p.produce(1, 0, seq)
    assert p.produce(1, 0, 1) == 1
    assert refused(p.produce, 1, 0, 0) is E.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_kip98_the_batches_of_one_produce_are_checked_in_order_before_any_is_stored():
    state = PartitionProducers()
    ok = [BatchInfo(1, 0, 0, 2, False, 0), BatchInfo(1, 0, 2, 1, False, 0)]
    assert state.check(ok) == [None, None]
    with pytest.raises(ProducerStateError):
        state.check([BatchInfo(1, 0, 0, 2, False, 0), BatchInfo(1, 0, 5, 1, False, 0)])
    assert state.producers == {}


# ---- transactions -------------------------------------------------------------------------


def test_kip98_an_open_transaction_holds_the_lso_until_its_marker():
    p = Partition()
    p.produce(1, 0, 0, count=2)                         # 0-1, not transactional
    p.produce(2, 0, 0, count=3, txn=True)               # 2-4
    p.produce(1, 0, 2)                                  # 5
    assert p.state.last_stable_offset(p.end) == 2
    p.marker(2, 0, commit=True)                         # 6
    assert p.state.last_stable_offset(p.end) == p.end == 7
    assert [o for o, _ in p.read_committed()] == [0, 1, 2, 3, 4, 5]


def test_kip98_an_aborted_transaction_is_in_the_aborted_index_and_read_committed_drops_it():
    p = Partition()
    p.produce(2, 0, 0, count=2, txn=True)               # 0-1
    p.produce(3, 0, 0, count=1, txn=True)               # 2
    p.marker(2, 0, commit=False)                        # 3
    p.marker(3, 0, commit=True)                         # 4
    (aborted,) = p.state.aborted_between(0, 10)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (2, 0, 3)
    assert p.state.aborted_between(4, 10) == []
    assert p.read_committed() == [(2, 3)]


def test_kip98_a_non_transactional_batch_during_the_producers_transaction_is_refused():
    p = Partition()
    p.produce(2, 0, 0, txn=True)
    assert refused(p.produce, 2, 0, 1) is E.INVALID_TXN_STATE


def test_kip98_a_marker_at_a_bumped_epoch_fences_the_old_producer():
    p = Partition()
    p.produce(2, 0, 0, txn=True)
    p.marker(2, 1, commit=False)                        # the coordinator fenced epoch 0
    assert refused(p.produce, 2, 0, 1, txn=True) is E.INVALID_PRODUCER_EPOCH
    assert refused(p.marker, 2, 0, True) is E.INVALID_PRODUCER_EPOCH
    assert refused(p.marker, 2, 1, True, coordinator_epoch=-5) is E.TRANSACTION_COORDINATOR_FENCED


def test_kip98_idle_producers_expire_but_not_one_with_an_open_transaction():
    p = Partition()
    p.produce(1, 0, 0, ts=1_000)
    p.produce(2, 0, 0, txn=True, ts=1_000)
    assert p.state.expire(now_ms=1_000 + 86_400_000, expiration_ms=86_400_000) == [1]
    assert set(p.state.producers) == {2}
    assert p.produce(1, 0, 17) == p.end - 1             # forgotten: any sequence starts it again


def test_kip98_deleted_records_take_their_aborted_transactions_and_idle_producers_with_them():
    p = Partition()
    p.produce(2, 0, 0, txn=True)
    p.marker(2, 0, commit=False)
    p.produce(3, 0, 0)
    p.state.truncate_head(1)
    assert len(p.state.aborted) == 1 and set(p.state.producers) == {3}
    p.state.truncate_head(2)
    assert p.state.aborted == [] and set(p.state.producers) == {3}
    p.state.truncate_head(3)
    assert p.state.producers == {}


def test_kip890_a_batch_cannot_overtake_a_lower_sequence_that_failed_verification():
    # The first batch of a transaction here (sequences 0-4) failed verification with a
    # retriable error; the producer's next batch (5-7) was verified: it waits for 0-4, as in
    # Kafka, or the partition would start the producer at 5 and refuse 0-4 for good.
    p = Partition()
    p.state.begin_verification(1, 0, 0, now_ms=0)          # 0-4: verification failed
    p.state.begin_verification(1, 0, 5, now_ms=1)          # 5-7: verified
    with pytest.raises(ProducerStateError) as refused:
        p.produce(1, 0, 5, count=3, txn=True)
    assert refused.value.code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    p.state.begin_verification(1, 0, 0, now_ms=2)          # 0-4 retried, verified
    assert p.produce(1, 0, 0, count=5, txn=True) == 0
    assert p.state.verifying == {}                          # the transaction's first batch clears it
    assert p.produce(1, 0, 5, count=3, txn=True) == 5


def test_kip890_the_lowest_sequence_under_verification_starts_over_at_a_new_epoch():
    p = Partition()
    p.state.begin_verification(1, 0, 3, now_ms=0)
    p.state.begin_verification(1, 0, 1, now_ms=0)          # lower, same epoch: the new lowest
    p.state.begin_verification(1, 0, 7, now_ms=0)          # higher: kept at 1
    assert p.state.verifying[1].lowest_sequence == 1
    p.state.begin_verification(1, 2, 4, now_ms=0)          # a bumped epoch: its own sequence
    assert (p.state.verifying[1].epoch, p.state.verifying[1].lowest_sequence) == (2, 4)
    assert p.produce(1, 2, 4, txn=True) == 0


def test_kip890_no_guard_once_the_transaction_is_open_here_and_an_end_marker_clears_it():
    p = Partition()
    p.produce(1, 0, 0, txn=True)
    p.state.begin_verification(1, 0, 1, now_ms=0)          # open here at this epoch: nothing kept
    assert p.state.verifying == {}
    p.marker(1, 0, commit=True)
    p.state.begin_verification(1, 1, 0, now_ms=0)          # the next transaction, verification failed
    p.marker(1, 1, commit=False)                            # the coordinator aborted it
    assert p.state.verifying == {}


def test_kip890_a_guard_left_behind_expires_with_idle_producers_and_stays_out_of_snapshots():
    p = Partition()
    p.state.begin_verification(7, 0, 3, now_ms=1_000)
    assert p.state.to_snapshot() == PartitionProducers().to_snapshot()
    p.state.expire(now_ms=1_000 + 59_999, expiration_ms=60_000)
    assert 7 in p.state.verifying
    p.state.expire(now_ms=1_000 + 60_000, expiration_ms=60_000)
    assert p.state.verifying == {}
    assert p.produce(7, 0, 3, txn=True) == 0               # an unknown producer starts anywhere again


def test_a_snapshot_round_trips_and_a_malformed_one_is_refused():
    p = Partition()
    p.produce(1, 0, 0, count=4)
    p.produce(2, 3, 0, txn=True)
    p.marker(2, 3, commit=False)
    p.produce(2, 3, 1, txn=True)
    assert PartitionProducers.from_snapshot(json.loads(json.dumps(p.state.to_snapshot()))) == p.state
    with pytest.raises(ValueError):
        PartitionProducers.from_snapshot({"producers": [[1, 2]], "aborted": []})


# ---- properties ---------------------------------------------------------------------------

PIDS = st.sampled_from([1, 2, 3])
ops = st.lists(st.one_of(
    st.tuples(st.just("send"), PIDS, st.integers(1, 3), st.booleans()),      # in-sequence batch
    st.tuples(st.just("retry"), PIDS),                                         # resend the last batch
    st.tuples(st.just("end"), PIDS, st.booleans()),                            # commit / abort
    st.tuples(st.just("bump"), PIDS),                                          # new epoch (fence)
), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.data())
def test_replay_gives_the_live_state_and_read_committed_never_shows_an_aborted_record(script, data):
    p = Partition()
    epoch = {1: 0, 2: 0, 3: 0}
    seq = {1: 0, 2: 0, 3: 0}
    last_sent: dict[int, tuple] = {}
    in_txn: dict[int, list[int]] = {}              # producer -> offsets of its open transaction
    committed: set[int] = set()
    aborted: set[int] = set()
    for op in script:
        kind, pid = op[0], op[1]
        if kind == "send":
            count, txn = op[2], op[3]
            if txn != (pid in in_txn) and pid in in_txn:
                txn = True                         # a producer in a transaction sends transactionally
            base = p.produce(pid, epoch[pid], seq[pid], count, txn)
            last_sent[pid] = (epoch[pid], seq[pid], count, txn, base)
            seq[pid] += count
            offsets = list(range(base, base + count))
            if txn:
                in_txn.setdefault(pid, []).extend(offsets)
            else:
                committed.update(offsets)
        elif kind == "retry" and pid in last_sent:
            e, s, count, txn, base = last_sent[pid]
            if e == epoch[pid]:
                try:
                    assert p.produce(pid, e, s, count, txn) == base      # deduplicated
                except ProducerStateError as exc:
                    # Older than the last five batches of this producer: refused, never stored twice.
                    assert exc.code is E.OUT_OF_ORDER_SEQUENCE_NUMBER
        elif kind == "end" and pid in in_txn:
            commit = op[2]
            p.marker(pid, epoch[pid], commit)
            (committed if commit else aborted).update(in_txn.pop(pid))
        elif kind == "bump":
            epoch[pid] += 1
            seq[pid] = 0
            if pid in in_txn:                      # the coordinator aborts at the new epoch
                p.marker(pid, epoch[pid], commit=False)
                aborted.update(in_txn.pop(pid))
        # Invariants after every step.
        lso = p.state.last_stable_offset(p.end)
        for offsets in in_txn.values():
            assert lso <= min(offsets)
        seen = [o for o, _ in p.read_committed()]
        assert not set(seen) & aborted
        assert set(seen) == {o for o in committed if o < lso}
        assert len(seen) == len(set(seen))
    cut = data.draw(st.integers(0, len(p.log)))
    assert p.rebuilt(cut) == p.state
    assert p.rebuilt(0) == p.state
