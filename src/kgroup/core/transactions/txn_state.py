"""The states of a transaction at its coordinator, and the one table of moves between them.

How this works: a transactional id is in one `TxnState` at a time, held in its `TxnValue`
(core/records.py) in the coordinator's stored state. A handler computes the next value,
checks the move with `check_transition` (an illegal move raises `IllegalTxnTransition` and
nothing changes) and returns it as a `TxnRecord`; `replay` stores it. The table is Kafka's
(TransactionState: the states each may be entered from), read the other way round:

    Empty           -> Ongoing (AddPartitionsToTxn / AddOffsetsToTxn), Empty (InitProducerId),
                       Dead (transactional.id expiry), PrepareAbort (a transaction.version 2
                       producer's EndTxn abort with nothing open, KIP-890 part 2)
    Ongoing         -> Ongoing (more partitions), PrepareCommit / PrepareAbort (EndTxn),
                       PrepareEpochFence (InitProducerId of a new producer, or the timeout)
    PrepareEpochFence -> PrepareAbort (the fenced transaction is aborted at the bumped epoch)
    PrepareCommit   -> CompleteCommit (every marker written)
    PrepareAbort    -> CompleteAbort (every marker written)
    CompleteCommit / CompleteAbort -> Empty, Ongoing, Dead, PrepareAbort (as from Empty)

PrepareEpochFence is never written to the log: a fence is Ongoing -> PrepareEpochFence ->
PrepareAbort inside one handler, both moves checked here, and only PrepareAbort (with the
bumped epoch) is recorded, as Kafka records only the PrepareAbort of an epoch fence.
"""

from __future__ import annotations

from enum import Enum


class TxnState(Enum):
    """A transaction's state; the value is Kafka's name (what DescribeTransactions shows and
    our log holds)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


T = TxnState

TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    T.EMPTY: frozenset({T.EMPTY, T.ONGOING, T.DEAD, T.PREPARE_ABORT}),
    T.ONGOING: frozenset({T.ONGOING, T.PREPARE_COMMIT, T.PREPARE_ABORT, T.PREPARE_EPOCH_FENCE}),
    T.PREPARE_EPOCH_FENCE: frozenset({T.PREPARE_ABORT}),
    T.PREPARE_COMMIT: frozenset({T.COMPLETE_COMMIT}),
    T.PREPARE_ABORT: frozenset({T.COMPLETE_ABORT}),
    T.COMPLETE_COMMIT: frozenset({T.EMPTY, T.ONGOING, T.DEAD, T.PREPARE_ABORT}),
    T.COMPLETE_ABORT: frozenset({T.EMPTY, T.ONGOING, T.DEAD, T.PREPARE_ABORT}),
    T.DEAD: frozenset(),
}

# States with a transaction in flight: its partitions may hold records without a marker.
IN_FLIGHT = frozenset({T.ONGOING, T.PREPARE_COMMIT, T.PREPARE_ABORT})
# Markers are being written; the transaction's producer must wait (CONCURRENT_TRANSACTIONS).
PREPARING = frozenset({T.PREPARE_COMMIT, T.PREPARE_ABORT})
# A transactional id idle in one of these may expire (transactional.id.expiration.ms).
EXPIRABLE = frozenset({T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT})


class IllegalTxnTransition(RuntimeError):
    """A bug: a handler tried a move the table forbids."""


def check_transition(current: TxnState, target: TxnState) -> None:
    """Raise `IllegalTxnTransition` unless `current -> target` is in the table."""
    if target not in TRANSITIONS[current]:
        raise IllegalTxnTransition(f"transaction cannot move from {current.value} to {target.value}")
