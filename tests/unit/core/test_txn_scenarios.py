"""Scenario tests of the transaction coordinator and transactional offsets, on a manual clock.

Named for the KIPs they pin down: KIP-98 (transactions), KIP-360 (epoch bumps of a known
producer), KIP-447 (offsets fenced by the group, RequireStable), KIP-890 (verification).
"""

from __future__ import annotations

from kgroup.core.errors import ErrorCode as E
from kgroup.core.records import TxnRecord
from kgroup.core.transactions.config import TransactionConfig
from kgroup.core.transactions.txn_state import TxnState as T

from tests.unit.core.txnctx import TxnContext

# ---- KIP-98: producer ids and epochs ------------------------------------------------------


def test_kip98_init_producer_id_gives_an_id_at_epoch_zero_and_bumps_it_on_the_next_init():
    ctx = TxnContext()
    pid, epoch = ctx.producer("tx")
    assert epoch == 0 and ctx.state("tx").state is T.EMPTY
    again = ctx.producer("tx")
    assert again == (pid, 1)
    other = ctx.producer("other")
    assert other[0] != pid


def test_kip98_init_producer_id_refuses_an_empty_id_and_a_timeout_past_the_maximum():
    ctx = TxnContext(txn_config=TransactionConfig(max_timeout_ms=10_000))
    assert ctx.init("").error is E.INVALID_REQUEST
    assert ctx.init("tx", timeout=10_001).error is E.INVALID_TRANSACTION_TIMEOUT
    assert ctx.init("tx", timeout=0).error is E.INVALID_TRANSACTION_TIMEOUT
    assert ctx.state("tx") is None and ctx.log == []


def test_kip98_add_partitions_starts_a_transaction_and_a_second_add_of_the_same_writes_nothing():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.now = 500
    done = ctx.add("tx", pid, epoch, ("t", 0), ("t", 1))
    assert [e for _, _, e in done.response.errors] == [E.NONE, E.NONE]
    state = ctx.state()
    assert state.state is T.ONGOING and state.partitions == (("t", 0), ("t", 1)) and state.start_ms == 500
    logged = len(ctx.log)
    assert ctx.add("tx", pid, epoch, ("t", 1)).response.errors == (("t", 1, E.NONE),)
    assert len(ctx.log) == logged
    ctx.add("tx", pid, epoch, ("u", 0))
    assert ctx.state().partitions == (("t", 0), ("t", 1), ("u", 0)) and ctx.state().start_ms == 500


def test_kip98_an_unknown_partition_fails_the_whole_add():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    done = ctx.add("tx", pid, epoch, ("t", 0), ("t", 9), ("nope", 0))
    assert done.response.errors == (("t", 0, E.OPERATION_NOT_ATTEMPTED), ("t", 9, E.UNKNOWN_TOPIC_OR_PARTITION),
                                    ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION))
    assert ctx.state().state is T.EMPTY


def test_kip98_unknown_partitions_are_answered_before_the_producer_is_looked_at():
    """As Kafka 4.4 does: its metadata check comes before the transaction coordinator, so an
    unknown transactional id with unknown partitions gets UNKNOWN_TOPIC_OR_PARTITION."""
    ctx = TxnContext()
    done = ctx.add("never-initialized", 987_654_321, 0, ("nope", 0), ("t", 0))
    assert done.raised is None
    assert done.response.errors == (("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, E.OPERATION_NOT_ATTEMPTED))
    assert ctx.add("never-initialized", 987_654_321, 0, ("t", 0)).error is E.INVALID_PRODUCER_ID_MAPPING


def test_kip98_requests_of_an_unknown_or_wrong_producer_are_refused():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    assert ctx.add("unknown", pid, epoch, ("t", 0)).error is E.INVALID_PRODUCER_ID_MAPPING
    assert ctx.add("tx", pid + 1, epoch, ("t", 0)).error is E.INVALID_PRODUCER_ID_MAPPING
    assert ctx.add("tx", pid, epoch + 1, ("t", 0)).error is E.PRODUCER_FENCED
    assert ctx.end("tx", pid, epoch + 1).error is E.PRODUCER_FENCED
    assert ctx.add_offsets("tx", pid, epoch - 1, "g").error is E.PRODUCER_FENCED


def test_kip98_commit_prepares_answers_then_completes_once_every_marker_is_written():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add("tx", pid, epoch, ("t", 0), ("u", 1))
    done = ctx.end("tx", pid, epoch, commit=True)
    assert done.error is E.NONE and ctx.state().state is T.PREPARE_COMMIT
    (markers,) = ctx.markers
    assert markers.commit and markers.partitions == (("t", 0), ("u", 1)) and markers.producer_epoch == epoch
    # While the markers are written the producer waits.
    assert ctx.add("tx", pid, epoch, ("t", 0)).error is E.CONCURRENT_TRANSACTIONS
    assert ctx.init("tx").error is E.CONCURRENT_TRANSACTIONS
    assert ctx.end("tx", pid, epoch, commit=True).response.error is E.CONCURRENT_TRANSACTIONS
    ctx.write_markers()
    assert ctx.written == [("t", 0, pid, epoch, True), ("u", 1, pid, epoch, True)]
    state = ctx.state()
    assert state.state is T.COMPLETE_COMMIT and state.partitions == ()
    # A retried EndTxn of the same outcome is answered again; the other outcome is refused.
    assert ctx.end("tx", pid, epoch, commit=True).error is E.NONE
    assert ctx.end("tx", pid, epoch, commit=False).error is E.INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    ctx.add("tx", pid, epoch, ("t", 2))
    assert ctx.state().state is T.ONGOING and ctx.state().partitions == (("t", 2),)


def test_kip98_abort_writes_abort_markers_and_an_empty_transaction_cannot_end():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    assert ctx.end("tx", pid, epoch, commit=False).error is E.INVALID_TXN_STATE
    ctx.add("tx", pid, epoch, ("t", 3))
    assert ctx.end("tx", pid, epoch, commit=False).error is E.NONE
    ctx.write_markers()
    assert ctx.written == [("t", 3, pid, epoch, False)] and ctx.state().state is T.COMPLETE_ABORT


def test_kip98_a_new_producer_fences_the_old_one_and_its_transaction_is_aborted_at_the_bumped_epoch():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add("tx", pid, epoch, ("t", 0))
    # The new instance's InitProducerId aborts the old transaction first and asks it to retry.
    assert ctx.init("tx").error is E.CONCURRENT_TRANSACTIONS
    state = ctx.state()
    assert state.state is T.PREPARE_ABORT and state.producer_epoch == epoch + 1
    (markers,) = ctx.write_markers()
    assert not markers.commit and markers.producer_epoch == epoch + 1
    # The zombie is fenced from now on, whatever it tries.
    assert ctx.add("tx", pid, epoch, ("t", 1)).error is E.PRODUCER_FENCED
    assert ctx.end("tx", pid, epoch, commit=True).error is E.PRODUCER_FENCED
    # The retry gets the next epoch.
    assert ctx.producer() == (pid, epoch + 2)


def test_kip98_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    ctx = TxnContext()
    pid, epoch = ctx.producer(timeout=5_000)
    ctx.now = 1_000
    ctx.add("tx", pid, epoch, ("t", 0))
    ctx.advance(4_999)
    assert ctx.state().state is T.ONGOING
    ctx.advance(1)
    assert ctx.state().state is T.PREPARE_ABORT and ctx.state().producer_epoch == epoch + 1
    ctx.write_markers()
    assert ctx.written == [("t", 0, pid, epoch + 1, False)]
    assert ctx.end("tx", pid, epoch, commit=True).error is E.PRODUCER_FENCED


def test_kip98_the_timeout_of_an_ended_transaction_does_not_abort_the_next_one():
    ctx = TxnContext()
    pid, epoch = ctx.producer(timeout=5_000)
    ctx.add("tx", pid, epoch, ("t", 0))
    ctx.end("tx", pid, epoch)
    ctx.write_markers()
    ctx.advance(3_000)
    ctx.add("tx", pid, epoch, ("t", 1))        # starts at 3000, times out at 8000
    ctx.advance(2_500)
    assert ctx.state().state is T.ONGOING
    ctx.advance(2_500)
    assert ctx.state().state is T.PREPARE_ABORT


def test_kip98_an_idle_transactional_id_expires_but_not_one_with_a_transaction_in_flight():
    ctx = TxnContext(txn_config=TransactionConfig(id_expiration_ms=10_000, id_expiration_check_interval_ms=1_000))
    ctx.producer("idle")
    pid, epoch = ctx.producer("busy", timeout=900_000)
    ctx.add("busy", pid, epoch, ("t", 0))
    ctx.advance(12_000)
    assert ctx.state("idle") is None and ctx.log[-1] == TxnRecord("idle", None)
    assert ctx.state("busy").state is T.ONGOING


def test_kip98_an_exhausted_epoch_rotates_to_a_new_producer_id():
    from dataclasses import replace
    ctx = TxnContext()
    pid, _ = ctx.producer()
    ctx.coord.replay(TxnRecord("tx", replace(ctx.state(), producer_epoch=32_765)))
    assert ctx.producer() == (pid, 32_766)          # the last epoch handed out
    rotated = ctx.producer()
    assert rotated[0] != pid and rotated[1] == 0 and ctx.state().previous_producer_id == pid


# ---- KIP-360: a known producer bumps its own epoch ----------------------------------------


def test_kip360_init_with_the_current_epoch_bumps_it_and_a_retry_gets_the_same_answer():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    bumped = ctx.init("tx", pid=pid, epoch=epoch)
    assert (bumped.response.producer_id, bumped.response.producer_epoch) == (pid, epoch + 1)
    retry = ctx.init("tx", pid=pid, epoch=epoch)    # the first answer was lost
    assert (retry.response.producer_id, retry.response.producer_epoch) == (pid, epoch + 1)


def test_kip360_init_with_a_stale_epoch_or_another_producer_id_is_fenced():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.producer()                                  # a new instance: epoch + 1, last epoch unknown
    assert ctx.init("tx", pid=pid, epoch=epoch).error is E.PRODUCER_FENCED
    assert ctx.init("tx", pid=pid + 99, epoch=0).error is E.PRODUCER_FENCED


# ---- KIP-447: transactional offsets -------------------------------------------------------


def test_kip447_txn_offsets_stay_pending_until_the_commit_marker_and_require_stable_sees_them():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.commit("g", "", -1, {("t", 0): 5})
    ctx.add_offsets("tx", pid, epoch, "g")
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 10, ("t", 1): 3}) is E.NONE
    assert ctx.committed("g") == {("t", 0): 5}
    assert ctx.fetch_stable("g", [("t", 0), ("t", 2)]) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT),
                                                           ("t", 2): (-1, E.NONE)}
    ctx.end("tx", pid, epoch, commit=True)
    assert ctx.committed("g") == {("t", 0): 5}          # still pending while markers go out
    ctx.write_markers()
    assert ctx.committed("g") == {("t", 0): 10, ("t", 1): 3}
    assert ctx.fetch_stable("g", [("t", 0)]) == {("t", 0): (10, E.NONE)}


def test_kip447_an_aborted_transaction_drops_its_offsets():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    ctx.txn_commit("g", "tx", pid, epoch, {("t", 0): 10})
    ctx.end("tx", pid, epoch, commit=False)
    ctx.write_markers()
    assert ctx.committed("g") == {}
    assert ctx.fetch_stable("g", [("t", 0)]) == {("t", 0): (-1, E.NONE)}


def test_kip447_txn_offset_commit_with_a_stale_generation_is_fenced():
    ctx = TxnContext()
    a, b = ctx.stable_group(2)
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 1}, generation=0, member=a) \
        is E.ILLEGAL_GENERATION
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 1}, generation=1, member="ghost") \
        is E.UNKNOWN_MEMBER_ID
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 1}, generation=1, member=a) is E.NONE


def test_kip447_txn_offset_commit_with_a_fenced_instance_id_is_refused():
    ctx = TxnContext()
    s0, _ = ctx.stable_group(2, static=True)
    pid, epoch = ctx.producer()
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 1}, generation=1, member=s0,
                          instance="instance-1") is E.FENCED_INSTANCE_ID


def test_kip447_txn_offset_commit_to_a_missing_group_with_a_generation_is_illegal():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    assert ctx.txn_commit_error("nope", "tx", pid, epoch, {("t", 0): 1}, generation=3, member="m") \
        is E.ILLEGAL_GENERATION
    # Without a generation (TxnOffsetCommit v0-v2, or a producer outside group management) it creates a
    # simple group, as OffsetCommit does.
    assert ctx.txn_commit_error("simple", "tx", pid, epoch, {("t", 0): 1}) is E.NONE
    assert "simple" in ctx.coord.groups


def test_kip447_a_rebalance_in_progress_does_not_hold_back_a_txn_offset_commit():
    ctx = TxnContext()
    joins = [ctx.join_new(), ctx.join_new()]
    ctx.run_until(lambda: all(j.done for j in joins))     # CompletingRebalance, generation 1
    member = joins[0].response.member_id
    pid, epoch = ctx.producer()
    assert ctx.commit("g", member, 1, {("t", 0): 1}).error is E.REBALANCE_IN_PROGRESS
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 1}, generation=1, member=member) is E.NONE


def test_kip447_txn_offset_commit_of_a_consumer_group_member_with_a_stale_epoch_is_an_illegal_generation():
    ctx = TxnContext()
    ctx.set_topics(t=4)
    join = ctx.cg_heartbeat("a", 0, topics=["t"])
    member, member_epoch = join.response.member_id, join.response.member_epoch
    pid, epoch = ctx.producer()
    assert ctx.txn_commit_error("cg", "tx", pid, epoch, {("t", 0): 1}, generation=member_epoch - 1,
                          member=member) is E.ILLEGAL_GENERATION
    assert ctx.txn_commit_error("cg", "tx", pid, epoch, {("t", 0): 1}, generation=member_epoch,
                          member=member) is E.NONE


def test_kip447_a_regular_commit_after_a_pending_offset_wins_over_it():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    ctx.txn_commit("g", "tx", pid, epoch, {("t", 0): 10, ("t", 1): 10})
    ctx.commit("g", "", -1, {("t", 0): 20})
    ctx.end("tx", pid, epoch)
    ctx.write_markers()
    assert ctx.committed("g") == {("t", 0): 20, ("t", 1): 10}


def test_kip447_committed_transactional_offsets_are_a_group_change_naming_them():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    ctx.txn_commit("g", "tx", pid, epoch, {("t", 1): 4, ("t", 0): 2})
    ctx.end("tx", pid, epoch)
    (markers,) = ctx.markers
    from kgroup.core.transactions.messages import TxnOffsetsMarker
    result = ctx.coord.txn_offsets_marker(TxnOffsetsMarker(pid, epoch, True, ("g",)), None, ctx.now)
    (change,) = result.changes
    assert change.group_id == "g" and change.committed == (("t", 0), ("t", 1))


# ---- KIP-890: verification ----------------------------------------------------------------


def test_kip890_only_an_ongoing_transaction_of_the_current_epoch_may_write_partitions_it_added():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    verify = ctx.coord.verify_txn
    assert verify("tx", pid, epoch, (("t", 0),)) is E.INVALID_TXN_STATE          # nothing added yet
    ctx.add("tx", pid, epoch, ("t", 0))
    ctx.add_offsets("tx", pid, epoch, "g")
    assert verify("tx", pid, epoch, (("t", 0),)) is E.NONE
    assert verify("tx", pid, epoch, group_id="g") is E.NONE
    assert verify("tx", pid, epoch, (("t", 1),)) is E.INVALID_TXN_STATE
    assert verify("tx", pid, epoch, group_id="h") is E.INVALID_TXN_STATE
    assert verify("tx", pid, epoch - 1, (("t", 0),)) is E.PRODUCER_FENCED
    assert verify("nope", pid, epoch, (("t", 0),)) is E.INVALID_PRODUCER_ID_MAPPING
    ctx.end("tx", pid, epoch)
    assert verify("tx", pid, epoch, (("t", 0),)) is E.CONCURRENT_TRANSACTIONS    # nothing after the end
    ctx.write_markers()
    assert verify("tx", pid, epoch, (("t", 0),)) is E.INVALID_TXN_STATE


# ---- restart ------------------------------------------------------------------------------


def test_kip98_after_a_restart_a_preparing_commit_writes_its_markers_again_and_completes():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add("tx", pid, epoch, ("t", 0))
    ctx.add_offsets("tx", pid, epoch, "g")
    ctx.txn_commit("g", "tx", pid, epoch, {("t", 0): 7})
    ctx.end("tx", pid, epoch)
    again = ctx.reloaded()                          # the broker died before the markers
    (markers,) = again.markers
    assert markers.commit and markers.partitions == (("t", 0),) and markers.groups == ("g",)
    again.write_markers()
    assert again.state().state is T.COMPLETE_COMMIT and again.committed("g") == {("t", 0): 7}


def test_kip98_after_a_restart_an_ongoing_transaction_is_aborted_at_its_timeout():
    ctx = TxnContext()
    pid, epoch = ctx.producer(timeout=10_000)
    ctx.add("tx", pid, epoch, ("t", 0))
    ctx.now = 4_000
    again = ctx.reloaded()
    assert again.markers == [] and again.state().state is T.ONGOING
    again.advance(5_999)
    assert again.state().state is T.ONGOING
    again.advance(1)
    assert again.state().state is T.PREPARE_ABORT and again.markers[0].producer_epoch == epoch + 1


def test_kip98_snapshot_records_rebuild_transactions_and_pending_offsets():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    ctx.commit("g", "", -1, {("t", 0): 1})
    ctx.txn_commit("g", "tx", pid, epoch, {("t", 0): 9})
    ctx.producer("done")
    from kgroup.core.coordinator import GroupCoordinatorShard
    fresh = GroupCoordinatorShard()
    for record in ctx.coord.snapshot_records():
        fresh.replay(record)
    assert fresh.stored.transactions == ctx.coord.stored.transactions
    assert fresh.stored.pending_offsets == ctx.coord.stored.pending_offsets
    assert fresh.stored.offsets == ctx.coord.stored.offsets


def test_describing_an_unknown_transactional_id_answers_with_kafkas_field_defaults():
    """Kafka's error entry of DescribeTransactions leaves producer id and epoch at 0."""
    ctx = TxnContext()
    (unknown, empty) = ctx.call(ctx.coord.describe_transactions, ("nobody", "")).response
    assert (unknown.error, unknown.producer_id, unknown.producer_epoch) == (E.TRANSACTIONAL_ID_NOT_FOUND, 0, 0)
    assert (empty.error, empty.producer_id, empty.producer_epoch) == (E.INVALID_REQUEST, 0, 0)
