"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
timeouts and expiry of transactional ids (KIP-98, KIP-360, KIP-447; KIP-890's verification).

How this works: a transactional id hashes to a group-metadata partition like a group id,
and this handler set runs in that partition's shard beside the group handlers. Its state is
one `TxnValue` per id in `stored.transactions`, changed only by replaying `TxnRecord`s, so
a restart (or, in a cluster, a new owner) rebuilds it with the same `replay`. Each handler
validates the producer (id, epoch) and the state, computes the next value, checks the move
against txn_state.py's table, and returns it as a record with its reply (sent once the
record is durable) -- or raises a GroupError and changes nothing.

Ending a transaction is two steps, as in Kafka. EndTxn records PrepareCommit/PrepareAbort
and answers; the Result carries `TxnMarkers`, which the broker writes into every partition
of the transaction and to the coordinators of its groups once that record is durable, then
reports back with `markers_written`, which records CompleteCommit/CompleteAbort. Until then
the producer's next request gets CONCURRENT_TRANSACTIONS. After a restart `loaded` hands
out the markers of every transaction still preparing, so a commit that was answered always
completes.

Fencing: InitProducerId bumps the epoch; if a transaction of the old epoch is in flight it
is first aborted at the bumped epoch (PrepareEpochFence -> PrepareAbort) and the new
producer is told CONCURRENT_TRANSACTIONS until that is done. The markers carry the new epoch
so each partition refuses the old producer from then on. A transaction open longer than its
timeout is aborted the same way (timer TXN_TIMEOUT, armed when it starts and after a load).
`verify` answers whether a producer may write to a partition or commit a group's offsets
now (its transaction is Ongoing at its epoch and has added them), so nothing lands in a
partition after its transaction ended (KIP-890 part 1).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import TxnRecord, TxnValue
from kgroup.core.result import EMPTY_RESULT, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.timers import TXN_ID_EXPIRY_KEY, TimerKind, TimerOp, txn_timeout_key
from kgroup.core.transactions.config import TransactionConfig
from kgroup.core.transactions.messages import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribedTxn,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListedTxn,
    ListTransactionsRequest,
    MarkersWritten,
    TxnMarkers,
    TxnResponse,
)
from kgroup.core.transactions.txn_state import EXPIRABLE, PREPARING, TxnState, check_transition

T = TxnState
E = ErrorCode
# Kafka never hands out epoch 32767 (Short.MaxValue), so a fence can always bump once more.
MAX_EPOCH = 32767


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH - 1


class TransactionCoordinator:
    """Handlers of the transaction APIs for the transactional ids of one shard."""

    def __init__(self, shard: ShardState, config: TransactionConfig,
                 new_producer_id: Callable[[], int]) -> None:
        self.shard = shard
        self.config = config
        # Injected: producer ids must never repeat, across restarts too (the broker keeps
        # them in durable blocks), and the core reads no files.
        self.new_producer_id = new_producer_id
        self.transactions = shard.stored.transactions

    # ---- helpers --------------------------------------------------------------------------

    def _producer(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnValue:
        """The id's state, if `producer_id`/`producer_epoch` are its current producer."""
        if not transactional_id:
            raise GroupError(E.INVALID_REQUEST, "the transactional id must not be empty")
        value = self.transactions.get(transactional_id)
        if value is None or value.producer_id != producer_id:
            raise GroupError(E.INVALID_PRODUCER_ID_MAPPING,
                             f"producer {producer_id} is not the producer of {transactional_id}")
        if value.producer_epoch != producer_epoch:
            raise GroupError(E.PRODUCER_FENCED,
                             f"epoch {producer_epoch} is not the current epoch {value.producer_epoch}")
        return value

    def _move(self, out: ResultBuilder, transactional_id: str, value: TxnValue, **changes) -> TxnValue:
        """Record `value` with `changes`, after checking the state move."""
        new = replace(value, **changes)
        check_transition(value.state, new.state)
        out.record(TxnRecord(transactional_id, new))
        return new

    def _arm_timeout(self, transactional_id: str, value: TxnValue) -> None:
        self.shard.timers.schedule(
            txn_timeout_key(transactional_id), value.start_ms + value.timeout_ms,
            TimerOp(TimerKind.TXN_TIMEOUT, transactional_id, generation=value.producer_epoch,
                    producer_id=value.producer_id))

    def _prepare_end(self, out: ResultBuilder, transactional_id: str, value: TxnValue, commit: bool,
                     now_ms: int, **changes) -> TxnValue:
        """Ongoing -> PrepareCommit/PrepareAbort, and the markers to write once it is durable."""
        new = self._move(out, transactional_id, value, state=T.PREPARE_COMMIT if commit else T.PREPARE_ABORT,
                         update_ms=now_ms, **changes)
        out.then(self.shard.timers.cancel, txn_timeout_key(transactional_id))
        out.marker(TxnMarkers(transactional_id, new.producer_id, new.producer_epoch, commit,
                              new.partitions, new.groups))
        return new

    def _fence(self, out: ResultBuilder, transactional_id: str, value: TxnValue, now_ms: int) -> None:
        """Abort the transaction in flight at a bumped epoch, fencing its producer."""
        check_transition(value.state, T.PREPARE_EPOCH_FENCE)
        fencing = replace(value, state=T.PREPARE_EPOCH_FENCE)
        self._prepare_end(out, transactional_id, fencing, False, now_ms,
                          producer_epoch=value.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH)

    # ---- InitProducerId -------------------------------------------------------------------

    def init_producer_id(self, req: InitProducerIdRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Give the transactional id's producer its id and a new epoch (fencing older ones)."""
        # 1. The request itself.
        if not req.transactional_id:
            raise GroupError(E.INVALID_REQUEST, "the transactional id must not be empty")
        if not 0 < req.transaction_timeout_ms <= self.config.max_timeout_ms:
            raise GroupError(E.INVALID_TRANSACTION_TIMEOUT,
                             f"transaction.timeout.ms {req.transaction_timeout_ms} is outside "
                             f"(0, {self.config.max_timeout_ms}] (transaction.max.timeout.ms)")
        out = ResultBuilder()
        tid = req.transactional_id
        value = self.transactions.get(tid)
        if value is None:
            value = TxnValue(self.new_producer_id(), NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                             req.transaction_timeout_ms, T.EMPTY, (), (), -1, now_ms)
        # 2. A producer that names its id and epoch (KIP-360) must be this id's producer, or
        #    retry a rotation it never heard the answer to.
        expected = req.producer_id >= 0
        if expected and not (value.producer_epoch == NO_PRODUCER_EPOCH or req.producer_id == value.producer_id
                             or (req.producer_id == value.previous_producer_id
                                 and epoch_exhausted(req.producer_epoch))):
            raise GroupError(E.PRODUCER_FENCED, f"producer {req.producer_id} is not the producer of {tid}")
        # 3. By state.
        if value.state in PREPARING:
            raise GroupError(E.CONCURRENT_TRANSACTIONS, f"{tid} is completing a transaction")
        if value.state is T.ONGOING:
            # The old producer's transaction is aborted at a bumped epoch first; the new
            # producer retries and gets the next epoch once that is done.
            self._fence(out, tid, value, now_ms)
            out.reply(reply, InitProducerIdResponse(E.CONCURRENT_TRANSACTIONS))
            return out.build()
        if epoch_exhausted(value.producer_epoch) and (not expected or req.producer_epoch == value.producer_epoch):
            producer_id, epoch = self.new_producer_id(), 0
            last_epoch = value.producer_epoch if expected else NO_PRODUCER_EPOCH
            previous = value.producer_id
        else:
            producer_id, previous = value.producer_id, value.previous_producer_id
            if not expected:
                epoch, last_epoch = value.producer_epoch + 1, NO_PRODUCER_EPOCH
            elif value.producer_epoch == NO_PRODUCER_EPOCH or req.producer_epoch == value.producer_epoch:
                epoch, last_epoch = value.producer_epoch + 1, value.producer_epoch
            elif req.producer_epoch == value.last_producer_epoch:
                epoch, last_epoch = value.producer_epoch, value.last_producer_epoch  # a retry
            else:
                raise GroupError(E.PRODUCER_FENCED,
                                 f"epoch {req.producer_epoch} is neither the current nor the last epoch of {tid}")
        self._move(out, tid, value, producer_id=producer_id, producer_epoch=epoch, last_producer_epoch=last_epoch,
                   previous_producer_id=previous, timeout_ms=req.transaction_timeout_ms, state=T.EMPTY,
                   partitions=(), groups=(), start_ms=-1, update_ms=now_ms)
        out.reply(reply, InitProducerIdResponse(E.NONE, producer_id, epoch))
        return out.build()

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    def _add(self, out: ResultBuilder, tid: str, value: TxnValue, now_ms: int,
             partitions: tuple = (), groups: tuple = (), client_version: int = 0) -> None:
        """Ongoing with these partitions and groups added (starting the transaction)."""
        if value.state is T.ONGOING and set(partitions) <= set(value.partitions) and set(groups) <= set(value.groups):
            return  # already there: nothing to write
        starting = value.state is not T.ONGOING
        new = self._move(out, tid, value, state=T.ONGOING, client_version=client_version,
                         partitions=tuple(sorted(set(value.partitions) | set(partitions))),
                         groups=tuple(sorted(set(value.groups) | set(groups))),
                         start_ms=now_ms if starting else value.start_ms, update_ms=now_ms)
        if starting:
            out.then(self._arm_timeout, tid, new)

    def _check_addable(self, req) -> TxnValue:
        value = self._producer(req.transactional_id, req.producer_id, req.producer_epoch)
        if value.state in PREPARING:
            raise GroupError(E.CONCURRENT_TRANSACTIONS, f"{req.transactional_id} is completing a transaction")
        return value

    def add_partitions(self, req: AddPartitionsToTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Add partitions to the producer's transaction (starting one if none is in flight)."""
        # 1. Every partition must exist; if one does not, none is added, and the producer is
        #    not looked at (Kafka checks its metadata before the transaction coordinator).
        topics = self.shard.topics
        unknown = {(t, p) for t, p in req.partitions if not 0 <= p < topics.get(t, ("", 0))[1]}
        out = ResultBuilder()
        if unknown:
            out.reply(reply, AddPartitionsToTxnResponse(tuple(
                (t, p, E.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in unknown else E.OPERATION_NOT_ATTEMPTED)
                for t, p in req.partitions)))
            return out.build()
        # 2. The producer and the state (one error for every partition).
        value = self._check_addable(req)
        # 3. Add them.
        self._add(out, req.transactional_id, value, now_ms, partitions=req.partitions,
                  client_version=req.client_version)
        out.reply(reply, AddPartitionsToTxnResponse(tuple((t, p, E.NONE) for t, p in req.partitions)))
        return out.build()

    def add_offsets(self, req: AddOffsetsToTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Add a group to the transaction: its offsets will be committed with it."""
        value = self._check_addable(req)
        if not req.group_id:
            raise GroupError(E.INVALID_GROUP_ID, "the group id must not be empty")
        out = ResultBuilder()
        self._add(out, req.transactional_id, value, now_ms, groups=(req.group_id,),
                  client_version=req.client_version)
        out.reply(reply, TxnResponse(E.NONE))
        return out.build()

    # ---- EndTxn ---------------------------------------------------------------------------

    def end_txn(self, req: EndTxnRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Commit or abort the producer's transaction; a retry of a finished one is answered
        again, the other outcome is INVALID_TXN_STATE. Under transaction.version 2 (EndTxn
        v5+, KIP-890 part 2) ending bumps the epoch (rotating the producer id when it is
        exhausted) and the answer carries it; the old epoch is then fenced everywhere."""
        tid = req.transactional_id
        if not tid:
            raise GroupError(E.INVALID_REQUEST, "the transactional id must not be empty")
        value = self.transactions.get(tid)
        if value is None:
            raise GroupError(E.INVALID_PRODUCER_ID_MAPPING, f"producer {req.producer_id} is not the producer of {tid}")
        state, commit = value.state, req.commit
        # A TV2 transaction's stored epoch is one past the client's once it has ended: that
        # (or, after a rotation, the old id at the last epoch) is a retry of that EndTxn.
        v2 = value.client_version >= 2
        retry_bumped = v2 and value.producer_epoch == req.producer_epoch + 1
        retry_rotated = (v2 and value.previous_producer_id == req.producer_id and value.producer_epoch == 0
                         and req.producer_epoch == MAX_EPOCH - 1)
        if v2:
            valid = (retry_bumped if state in PREPARING else retry_bumped or retry_rotated
                     or req.producer_epoch == value.producer_epoch
                     if state in (T.COMPLETE_COMMIT, T.COMPLETE_ABORT) else req.producer_epoch == value.producer_epoch)
        else:
            valid = req.producer_epoch == value.producer_epoch
        if value.producer_id != req.producer_id and not retry_rotated:
            raise GroupError(E.INVALID_PRODUCER_ID_MAPPING, f"producer {req.producer_id} is not the producer of {tid}")
        if not valid:
            raise GroupError(E.PRODUCER_FENCED,
                             f"epoch {req.producer_epoch} is not the current epoch {value.producer_epoch}")
        # Under TV1 the same epoch after the end is a retry; under TV2 only the old one is.
        retry = retry_bumped or retry_rotated or not (v2 or req.client_version >= 2)
        out = ResultBuilder()
        finished = T.COMPLETE_COMMIT if commit else T.COMPLETE_ABORT
        preparing = T.PREPARE_COMMIT if commit else T.PREPARE_ABORT
        if state is finished and retry:
            out.reply(reply, EndTxnResponse(E.NONE, value.producer_id, value.producer_epoch))
            return out.build()
        if state is preparing:
            out.reply(reply, EndTxnResponse(E.CONCURRENT_TRANSACTIONS))     # (no id nor epoch, as Kafka)
            return out.build()
        # A TV2 producer may abort with nothing open (Kafka 4.4): an abort with no partitions,
        # which still bumps the epoch.
        empty_abort = (req.client_version >= 2 and not commit
                       and (state is T.EMPTY or state in (T.COMPLETE_COMMIT, T.COMPLETE_ABORT) and not retry))
        if state is not T.ONGOING and not empty_abort:
            raise GroupError(E.INVALID_TXN_STATE, f"cannot {'commit' if commit else 'abort'} {tid} in {state.value}")
        changes: dict = {"client_version": req.client_version}
        if empty_abort:
            changes.update(partitions=(), groups=(), start_ms=now_ms)
        if req.client_version >= 2:
            changes.update(producer_epoch=value.producer_epoch + 1, last_producer_epoch=value.producer_epoch)
            if epoch_exhausted(value.producer_epoch):
                changes["next_producer_id"] = self.new_producer_id()
        new = self._prepare_end(out, tid, value, commit, now_ms, **changes)
        # The producer's id and epoch from now on (a rotated id starts at epoch 0).
        if new.next_producer_id >= 0:
            out.reply(reply, EndTxnResponse(E.NONE, new.next_producer_id, 0))
        else:
            out.reply(reply, EndTxnResponse(E.NONE, new.producer_id, new.producer_epoch))
        return out.build()

    def markers_written(self, req: MarkersWritten, reply: ReplyTo, now_ms: int) -> Result:
        """Every marker of the transaction is durable: CompleteCommit / CompleteAbort."""
        value = self.transactions.get(req.transactional_id)
        out = ResultBuilder()
        if (value is not None and value.state in PREPARING and value.producer_id == req.producer_id
                and value.producer_epoch == req.producer_epoch):
            done = T.COMPLETE_COMMIT if value.state is T.PREPARE_COMMIT else T.COMPLETE_ABORT
            rotated = {}
            if value.next_producer_id >= 0:
                # The epoch was exhausted (KIP-890 part 2): the producer goes on as the new id.
                rotated = dict(producer_id=value.next_producer_id, producer_epoch=0,
                               previous_producer_id=value.producer_id, next_producer_id=NO_PRODUCER_ID)
            self._move(out, req.transactional_id, value, state=done, partitions=(), groups=(), update_ms=now_ms,
                       **rotated)
        out.reply(reply, TxnResponse(E.NONE))
        return out.build()

    # ---- timers ---------------------------------------------------------------------------

    def timed_out(self, op: TimerOp, now_ms: int) -> Result:
        """A transaction ran past its timeout: abort it, fencing its producer."""
        value = self.transactions.get(op.group_id)
        if (value is None or value.state is not T.ONGOING or value.producer_id != op.producer_id
                or value.producer_epoch != op.generation):
            return EMPTY_RESULT
        out = ResultBuilder()
        self._fence(out, op.group_id, value, now_ms)
        return out.build()

    def schedule_id_expiry(self, now_ms: int) -> None:
        self.shard.timers.schedule(TXN_ID_EXPIRY_KEY, now_ms + self.config.id_expiration_check_interval_ms,
                                   TimerOp(TimerKind.TXN_ID_EXPIRY, ""))

    def expire_ids(self, op: TimerOp, now_ms: int) -> Result:
        """Forget transactional ids idle past transactional.id.expiration.ms."""
        out = ResultBuilder()
        limit = self.config.id_expiration_ms
        for tid, value in sorted(self.transactions.items()):
            if value.state in EXPIRABLE and now_ms - value.update_ms >= limit:
                check_transition(value.state, T.DEAD)
                out.record(TxnRecord(tid, None))
        self.schedule_id_expiry(now_ms)
        return out.build()

    def loaded(self, now_ms: int) -> Result:
        """After a replay: re-arm the timeouts of open transactions and hand out the markers
        of the ones that were preparing (their writing may have been cut short)."""
        out = ResultBuilder()
        for tid, value in sorted(self.transactions.items()):
            if value.state is T.ONGOING:
                self._arm_timeout(tid, value)
            elif value.state in PREPARING:
                out.marker(TxnMarkers(tid, value.producer_id, value.producer_epoch,
                                      value.state is T.PREPARE_COMMIT, value.partitions, value.groups))
        self.schedule_id_expiry(now_ms)
        return out.build()

    # ---- verification (KIP-890 part 1) ----------------------------------------------------

    def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
               partitions: tuple = (), group_id: str | None = None) -> ErrorCode:
        """NONE if the producer's transaction is Ongoing at this epoch and holds the
        partitions (or the group); else why not. Reads state only."""
        value = self.transactions.get(transactional_id)
        if value is None or value.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if value.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        if value.state in PREPARING:
            return E.CONCURRENT_TRANSACTIONS
        if value.state is not T.ONGOING:
            return E.INVALID_TXN_STATE
        if partitions and not set(partitions) <= set(value.partitions):
            return E.INVALID_TXN_STATE
        if group_id is not None and group_id not in value.groups:
            return E.INVALID_TXN_STATE
        return E.NONE

    # ---- admin ----------------------------------------------------------------------------

    def describe(self, transactional_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        """DescribeTransactions: each id's state, producer and partitions."""
        described = []
        for tid in transactional_ids:
            value = self.transactions.get(tid)
            # An error entry carries Kafka's field defaults: producer id and epoch 0.
            if not tid:
                described.append(DescribedTxn(tid, E.INVALID_REQUEST, producer_id=0, producer_epoch=0))
            elif value is None:
                described.append(DescribedTxn(tid, E.TRANSACTIONAL_ID_NOT_FOUND, producer_id=0, producer_epoch=0))
            else:
                described.append(DescribedTxn(tid, E.NONE, value.state.value, value.producer_id,
                                              value.producer_epoch, value.timeout_ms, value.start_ms,
                                              value.partitions, value.groups))
        return Result((), ((reply, tuple(described)),))

    def list(self, req: ListTransactionsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """ListTransactions: ids filtered by state, producer id and (v1) running time."""
        states = set(req.states)
        pids = set(req.producer_ids)
        listed = []
        for tid, value in sorted(self.transactions.items()):
            if states and value.state.value not in states:
                continue
            if pids and value.producer_id not in pids:
                continue
            # Kafka: running longer than the duration, measured from the start time as it is:
            # a transaction with none (-1: Empty) counts as running since the epoch.
            if req.min_duration_ms >= 0 and now_ms - value.start_ms <= req.min_duration_ms:
                continue
            listed.append(ListedTxn(tid, value.producer_id, value.state.value))
        return Result((), ((reply, tuple(listed)),))
