"""KIP-890 part 2 (transaction.version 2) at the transaction coordinator, on a manual clock:
every EndTxn bumps the producer epoch and answers it, the old epoch is fenced, a retried
EndTxn is told from the next one by the stored epoch, an exhausted epoch rotates the
producer id, partitions and groups join a transaction implicitly, all of it durable."""

from __future__ import annotations

import json

from kgroup.core.errors import ErrorCode as E
from kgroup.core.transactions.coordinator import MAX_EPOCH
from kgroup.core.messages import OffsetCommitPartition
from kgroup.core.transactions.messages import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest,
                                               TxnOffsetCommitRequest)
from kgroup.core.transactions.txn_state import TxnState as T
from kgroup.core.record_codec import decode, encode
from kgroup.core.records import TxnRecord

from tests.unit.core.txnctx import TxnContext


def add2(ctx: TxnContext, pid: int, epoch: int, *partitions, tid: str = "tx"):
    """A partition added the TV2 way (a Produce v12+ of the producer, or AddPartitionsToTxn v5)."""
    done = ctx.call(ctx.coord.add_partitions_to_txn, AddPartitionsToTxnRequest(tid, pid, epoch, partitions, 2))
    return done.raised if done.raised is not None else done.response.errors[0][2]


def end2(ctx: TxnContext, pid: int, epoch: int, commit: bool = True, tid: str = "tx"):
    """EndTxn v5."""
    return ctx.call(ctx.coord.end_txn, EndTxnRequest(tid, pid, epoch, commit, client_version=2))


def test_kip890_end_txn_v5_bumps_the_epoch_and_answers_it():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    assert add2(ctx, pid, epoch, ("t", 0)) is E.NONE
    assert ctx.state().client_version == 2
    done = end2(ctx, pid, epoch)
    assert done.error is E.NONE
    assert (done.response.producer_id, done.response.producer_epoch) == (pid, epoch + 1)
    state = ctx.state()
    assert state.state is T.PREPARE_COMMIT and state.producer_epoch == epoch + 1
    # The markers carry the bumped epoch: each partition fences the old one from then on.
    (markers,) = ctx.write_markers()
    assert markers.producer_epoch == epoch + 1
    assert ctx.written == [("t", 0, pid, epoch + 1, True)]
    assert ctx.state().state is T.COMPLETE_COMMIT and ctx.state().producer_epoch == epoch + 1


def test_kip890_the_old_epoch_is_fenced_and_a_retry_is_answered_again():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    add2(ctx, pid, epoch, ("t", 0))
    end2(ctx, pid, epoch)
    # While the markers are written a retry (the old epoch) waits.
    assert end2(ctx, pid, epoch).error is E.CONCURRENT_TRANSACTIONS
    ctx.write_markers()
    # Once complete a retry is answered with the new epoch; the other outcome is refused.
    retry = end2(ctx, pid, epoch)
    assert retry.error is E.NONE and retry.response.producer_epoch == epoch + 1
    assert end2(ctx, pid, epoch, commit=False).error is E.INVALID_TXN_STATE
    # The old epoch can start nothing; the new one starts the next transaction.
    assert add2(ctx, pid, epoch, ("t", 1)) is E.PRODUCER_FENCED
    assert ctx.add_offsets("tx", pid, epoch, "g").error is E.PRODUCER_FENCED
    assert add2(ctx, pid, epoch + 1, ("t", 1)) is E.NONE
    # An old-epoch EndTxn now is a zombie, not a retry.
    assert end2(ctx, pid, epoch).error is E.PRODUCER_FENCED
    aborted = end2(ctx, pid, epoch + 1, commit=False)
    assert aborted.error is E.NONE and aborted.response.producer_epoch == epoch + 2
    ctx.write_markers()
    assert ctx.written[-1] == ("t", 1, pid, epoch + 2, False)


def test_kip890_a_tv1_end_txn_keeps_the_epoch():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add("tx", pid, epoch, ("t", 0))
    done = ctx.end("tx", pid, epoch)
    assert done.error is E.NONE and ctx.state().producer_epoch == epoch and ctx.state().client_version == 0


def test_kip890_an_exhausted_epoch_rotates_the_producer_id_once_the_markers_are_written():
    ctx = TxnContext()
    pid, _ = ctx.producer()
    # The producer has ended 32765 transactions: its epoch is Short.MAX_VALUE - 1.
    value = ctx.state()
    exhausted = MAX_EPOCH - 1
    ctx.coord.stored.transactions["tx"] = type(value)(**{**{f: getattr(value, f) for f in value.__slots__},
                                                         "producer_epoch": exhausted})
    add2(ctx, pid, exhausted, ("t", 0))
    done = end2(ctx, pid, exhausted)
    assert done.error is E.NONE
    new_pid = done.response.producer_id
    assert new_pid != pid and done.response.producer_epoch == 0
    # The markers go out under the old id at the last epoch; then the id rotates.
    (markers,) = ctx.write_markers()
    assert (markers.producer_id, markers.producer_epoch) == (pid, MAX_EPOCH)
    state = ctx.state()
    assert (state.producer_id, state.producer_epoch, state.previous_producer_id) == (new_pid, 0, pid)
    assert state.next_producer_id == -1
    # A retry under the old id is answered with the new one; the new id goes on.
    retry = end2(ctx, pid, exhausted)
    assert retry.error is E.NONE and (retry.response.producer_id, retry.response.producer_epoch) == (new_pid, 0)
    assert add2(ctx, new_pid, 0, ("t", 1)) is E.NONE


def test_kip890_txn_offset_commit_v5_adds_the_group_itself():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    done = ctx.call(ctx.coord.add_offsets_to_txn, AddOffsetsToTxnRequest("tx", pid, epoch, "g", client_version=2))
    assert done.error is E.NONE
    state = ctx.state()
    assert state.state is T.ONGOING and state.groups == ("g",) and state.client_version == 2
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 5}) is E.NONE
    end2(ctx, pid, epoch)
    ctx.write_markers()
    assert ctx.fetch_stable("g", [("t", 0)])[("t", 0)] == (5, E.NONE)


def test_kip890_the_bumped_epoch_survives_a_restart():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    add2(ctx, pid, epoch, ("t", 0))
    end2(ctx, pid, epoch)          # PrepareCommit at epoch + 1 is durable; the markers are not
    again = ctx.reloaded()
    state = again.state()
    assert state.state is T.PREPARE_COMMIT and state.producer_epoch == epoch + 1 and state.client_version == 2
    # The reloaded coordinator writes the markers again at the bumped epoch.
    (markers,) = again.markers
    assert markers.producer_epoch == epoch + 1
    again.write_markers()
    assert end2(again, pid, epoch).response.producer_epoch == epoch + 1
    assert end2(again, pid, epoch + 1).error is E.INVALID_TXN_STATE    # nothing in flight at epoch + 1
    assert add2(again, pid, epoch + 1, ("t", 0)) is E.NONE


def test_kip890_a_record_written_before_tv2_reads_as_tv0():
    """Records of a data dir made before KIP-890 part 2 (ten fields) read with
    client_version 0 and no next producer id; new ones keep both."""
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    add2(ctx, pid, epoch, ("t", 0))
    record = TxnRecord("tx", ctx.state())
    payload = encode(record)
    assert decode(payload) == record and record.value.client_version == 2
    head, _, body = payload.partition(b"[")
    fields = json.loads(b"[" + body)
    old = head + json.dumps(fields[:10], separators=(",", ":")).encode()
    read = decode(old).value
    assert (read.client_version, read.next_producer_id) == (0, -1)
    assert read.producer_epoch == epoch and read.partitions == (("t", 0),)


def test_kip890_a_tv2_abort_with_nothing_open_bumps_the_epoch():
    """As Kafka 4.4 answers: EndTxn v5 abort with no transaction open (Empty, or complete at
    the current epoch) is an empty abort that bumps the epoch; a commit is INVALID_TXN_STATE."""
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    assert end2(ctx, pid, epoch).error is E.INVALID_TXN_STATE
    done = end2(ctx, pid, epoch, commit=False)
    assert done.error is E.NONE and done.response.producer_epoch == epoch + 1
    assert ctx.state().state is T.PREPARE_ABORT and ctx.state().partitions == ()
    (markers,) = ctx.write_markers()
    assert markers.partitions == () and ctx.state().state is T.COMPLETE_ABORT
    # Complete at the current epoch: commit refused, abort bumps again; the old epoch's abort
    # is a retry, answered with the current epoch.
    assert end2(ctx, pid, epoch + 1).error is E.INVALID_TXN_STATE
    assert end2(ctx, pid, epoch, commit=False).response.producer_epoch == epoch + 1
    assert end2(ctx, pid, epoch + 1, commit=False).response.producer_epoch == epoch + 2


def test_kip1319_txn_offset_commit_v6_names_a_missing_group_group_id_not_found():
    """A group that does not exist, named with a generation: v6 answers GROUP_ID_NOT_FOUND,
    older versions ILLEGAL_GENERATION (as Kafka 4.4)."""
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "nobody")
    for version, code in ((5, E.ILLEGAL_GENERATION), (6, E.GROUP_ID_NOT_FOUND)):
        done = ctx.call(ctx.coord.txn_offset_commit, TxnOffsetCommitRequest(
            "nobody", "tx", pid, epoch, (OffsetCommitPartition("t", 0, 1),), 3, "m", None, api_version=version))
        assert done.raised is code
