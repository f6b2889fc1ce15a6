"""The producer state of one topic partition: sequence numbers, open and aborted transactions.

How this works: every batch from an idempotent or transactional producer carries its
producer id, epoch and the sequence number of its first record. Per producer id the
partition keeps its epoch, where its last five batches landed (Kafka's limit of five
requests in flight), the coordinator epoch of its last marker, its last timestamp, and the
first offset of its transaction in this partition if one is open. Before an append,
`check` validates the batches of a produce in order (Kafka's ProducerAppendInfo): a batch
the producer sent before (same epoch, same first and last sequence as one of the last five)
is a duplicate and is answered with where it landed, not stored again; an older epoch is
INVALID_PRODUCER_EPOCH; a sequence that does not follow the last one is
OUT_OF_ORDER_SEQUENCE_NUMBER (a new epoch must start at 0); a non-transactional batch while
the producer's transaction is open is INVALID_TXN_STATE. `append` then records a batch where
storage put it, and `append_marker` an end-of-transaction control batch, which closes the
producer's open transaction here (an abort joins the aborted index) and takes the marker's
epoch, so the fenced producer's late batches are refused.

A transaction's first batch in a partition is verified with its coordinator first (KIP-890
part 1), and verification can fail with a retriable error while the producer's later
batches, sent in the same flight, pass it. Kafka then keeps the lowest sequence it saw
under verification (its VerificationStateEntry) and refuses a higher one as
OUT_OF_ORDER_SEQUENCE_NUMBER until that batch is written: otherwise a partition that does
not know the producer yet would take the later batch as the producer's start, and the
retried lower one would be out of order for good. `begin_verification` records it before
the coordinator answers (so a failed verification leaves it behind, by design), `check`
applies it, and the producer's first transactional batch or an end marker here clears it;
`expire` drops one left behind by a producer that never came back.

The last stable offset is the first offset of the earliest open transaction, or the high
watermark when none is open: read_committed consumers read below it, and get the aborted
transactions overlapping what they read so they can drop those records. Nothing here
validates replay: rebuilding the state from the partition's batches after a restart is
`append`/`append_marker` over them in order, from a snapshot (`to_snapshot` /
`from_snapshot`) so the scan stays short, as Kafka's producer-state snapshots do.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Sequence

from kgroup.core.errors import ErrorCode

INT32_MAX = 2**31 - 1
NO_SEQUENCE = -1
NO_EPOCH = -1
# Kafka's NUM_BATCHES_TO_RETAIN: a producer has at most five requests in flight, so a retry
# is one of its last five batches.
BATCHES_KEPT = 5


def last_sequence(base_sequence: int, record_count: int) -> int:
    """The sequence number of a batch's last record (sequences wrap past INT32_MAX to 0)."""
    last = base_sequence + record_count - 1
    return last - INT32_MAX - 1 if last > INT32_MAX else last


def in_sequence(last: int, following: int) -> bool:
    return following == last + 1 or (following == 0 and last == INT32_MAX)


class ProducerStateError(Exception):
    """A batch or marker the partition refuses, with its Kafka error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the producer state reads from a record batch header."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    transactional: bool
    max_timestamp: int

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.record_count)


@dataclass(frozen=True, slots=True)
class Appended:
    """Where one of a producer's recent batches landed."""

    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: list[Appended] = field(default_factory=list)
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, list(self.batches), self.coordinator_epoch,
                             self.last_timestamp, self.txn_first_offset)

    def duplicate_of(self, batch: BatchInfo) -> Appended | None:
        if batch.producer_epoch != self.epoch:
            return None
        last = batch.last_sequence
        for appended in self.batches:
            if appended.first_sequence == batch.base_sequence and appended.last_sequence == last:
                return appended
        return None


@dataclass(frozen=True, slots=True)
class Verifying:
    """A producer whose first transactional batch here is being, or failed to be, verified."""

    epoch: int
    lowest_sequence: int
    since_ms: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int          # the offset of its abort marker


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """A producer as DescribeProducers shows it."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_first_offset: int


class PartitionProducers:
    """Producer state of one partition (see the module docstring)."""

    __slots__ = ("producers", "ongoing", "aborted", "_aborted_ends", "verifying")

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction here
        self.ongoing: dict[int, int] = {}
        # aborted transactions in the order of their markers (so by last offset)
        self.aborted: list[AbortedTxn] = []
        self._aborted_ends: list[int] = []
        # producer id -> the lowest sequence seen under verification (runtime only: never in a
        # snapshot, as Kafka keeps its verification state in memory)
        self.verifying: dict[int, Verifying] = {}

    # ---- produce ----------------------------------------------------------------------------

    def begin_verification(self, producer_id: int, epoch: int, sequence: int, now_ms: int) -> None:
        """A transactional batch is about to be verified: unless the producer's transaction
        is open here already at this epoch, remember the lowest sequence seen (a higher
        epoch starts over), whatever the coordinator answers."""
        entry = self.producers.get(producer_id)
        if producer_id in self.ongoing and entry is not None and entry.epoch == epoch:
            return
        seen = self.verifying.get(producer_id)
        if seen is None:
            self.verifying[producer_id] = Verifying(epoch, sequence, now_ms)
        elif epoch > seen.epoch or (epoch == seen.epoch and sequence < seen.lowest_sequence):
            self.verifying[producer_id] = Verifying(epoch, sequence, seen.since_ms)

    def check(self, batches: Sequence[BatchInfo]) -> list[Appended | None]:
        """Validate one produce's batches in order, as if each before was appended: per
        batch None (append it) or where its earlier copy landed (a duplicate). Raises
        ProducerStateError for the first batch the partition refuses; changes nothing."""
        scratch: dict[int, ProducerEntry] = {}
        verdicts: list[Appended | None] = []
        for batch in batches:
            pid = batch.producer_id
            if pid < 0:
                verdicts.append(None)
                continue
            entry = scratch.get(pid)
            if entry is None:
                self._check_verifying(batch)
                known = self.producers.get(pid)
                entry = known.copy() if known is not None else None
            if entry is not None:
                earlier = entry.duplicate_of(batch)
                if earlier is not None:
                    if earlier.base_offset < 0:
                        raise ProducerStateError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
                                                 f"producer {pid} sent the same batch twice in one request")
                    verdicts.append(earlier)
                    continue
            self._validate(entry, batch)
            entry = entry if entry is not None else ProducerEntry(pid)
            _record(entry, batch, -1, -1)
            if batch.transactional:
                entry.txn_first_offset = max(entry.txn_first_offset, 0)  # open, offset unknown yet
            scratch[pid] = entry
            verdicts.append(None)
        return verdicts

    def _check_verifying(self, batch: BatchInfo) -> None:
        """Refuse a transactional batch beyond the lowest sequence still awaiting verification."""
        seen = self.verifying.get(batch.producer_id) if batch.transactional else None
        if seen is not None and batch.base_sequence > seen.lowest_sequence:
            raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     f"producer {batch.producer_id}: sequence {batch.base_sequence} is past "
                                     f"{seen.lowest_sequence}, the earliest seen under verification")

    @staticmethod
    def _validate(entry: ProducerEntry | None, batch: BatchInfo) -> None:
        pid, epoch, first = batch.producer_id, batch.producer_epoch, batch.base_sequence
        if entry is None or entry.epoch == NO_EPOCH:
            return  # a producer this partition does not know: any sequence starts it
        if epoch < entry.epoch:
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"producer {pid}: epoch {epoch} is older than {entry.epoch}")
        if epoch > entry.epoch:
            if first != 0:
                raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                         f"producer {pid}: a new epoch {epoch} must start at sequence 0, not {first}")
        elif not in_sequence(entry.last_seq, first):
            raise ProducerStateError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     f"producer {pid}: sequence {first} does not follow {entry.last_seq}")
        if entry.txn_first_offset >= 0 and not batch.transactional:
            raise ProducerStateError(ErrorCode.INVALID_TXN_STATE,
                                     f"producer {pid}: a non-transactional batch while its transaction is open")

    def append(self, batch: BatchInfo, base_offset: int, last_offset: int) -> None:
        """A batch was stored at [base_offset, last_offset] (live, or replaying the log)."""
        pid = batch.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid)
        _record(entry, batch, base_offset, last_offset)
        if batch.transactional:
            self.verifying.pop(pid, None)
            if pid not in self.ongoing:
                self.ongoing[pid] = entry.txn_first_offset

    # ---- markers ------------------------------------------------------------------------------

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Raise ProducerStateError if a marker must be refused (an older producer epoch, or
        a coordinator older than the last one that wrote here)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise ProducerStateError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                     f"marker of producer {producer_id} at epoch {producer_epoch} < {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise ProducerStateError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                                     f"marker from coordinator epoch {coordinator_epoch} < {entry.coordinator_epoch}")

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      offset: int, timestamp: int) -> AbortedTxn | None:
        """An end-of-transaction marker was stored at `offset`; returns the transaction it
        aborted here, if any."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        aborted = None
        self.verifying.pop(producer_id, None)
        first = self.ongoing.pop(producer_id, None)
        if first is not None and not commit:
            aborted = AbortedTxn(producer_id, first, offset)
            self.aborted.append(aborted)
            self._aborted_ends.append(offset)
        entry.txn_first_offset = -1
        if producer_epoch != entry.epoch:
            entry.epoch = producer_epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        return aborted

    # ---- reads --------------------------------------------------------------------------------

    def last_stable_offset(self, high_watermark: int) -> int:
        """Where read_committed stops: the first offset of the earliest open transaction."""
        if not self.ongoing:
            return high_watermark
        return min(high_watermark, min(self.ongoing.values()))

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that overlap [start, end) (what a fetch of that range needs)."""
        out = []
        for i in range(bisect_left(self._aborted_ends, start), len(self.aborted)):
            txn = self.aborted[i]
            if txn.first_offset < end:
                out.append(txn)
        return out

    def active(self) -> list[ActiveProducer]:
        """DescribeProducers: every producer this partition knows, by id."""
        return [ActiveProducer(pid, e.epoch, e.last_seq, e.last_timestamp, e.coordinator_epoch, e.txn_first_offset)
                for pid, e in sorted(self.producers.items())]

    # ---- upkeep -------------------------------------------------------------------------------

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for producer.id.expiration.ms (never one with an open
        transaction); returns their ids. As in Kafka, idle is judged by batch timestamps."""
        gone = [pid for pid, e in self.producers.items()
                if e.txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in gone:
            del self.producers[pid]
        for pid in [pid for pid, v in self.verifying.items() if now_ms - v.since_ms >= expiration_ms]:
            del self.verifying[pid]
        return gone

    def truncate_head(self, log_start: int) -> None:
        """Records below `log_start` were deleted: forget what only they held."""
        keep = bisect_left(self._aborted_ends, log_start)
        if keep:
            del self.aborted[:keep]
            del self._aborted_ends[:keep]
        for pid in [pid for pid, e in self.producers.items()
                    if e.txn_first_offset < 0 and 0 <= e.last_offset < log_start]:
            del self.producers[pid]

    # ---- snapshots ----------------------------------------------------------------------------

    def to_snapshot(self) -> dict[str, Any]:
        """The state as plain JSON-able data."""
        return {
            "producers": [[e.producer_id, e.epoch, e.coordinator_epoch, e.last_timestamp, e.txn_first_offset,
                           [[b.first_sequence, b.last_sequence, b.base_offset, b.last_offset] for b in e.batches]]
                          for e in self.producers.values()],
            "aborted": [[a.producer_id, a.first_offset, a.last_offset] for a in self.aborted],
        }

    @classmethod
    def from_snapshot(cls, data: dict[str, Any]) -> PartitionProducers:
        """The state `to_snapshot` describes; ValueError if it is malformed."""
        state = cls()
        try:
            for pid, epoch, coord_epoch, ts, txn_first, batches in data["producers"]:
                entry = ProducerEntry(int(pid), int(epoch), [Appended(*(int(x) for x in b)) for b in batches],
                                      int(coord_epoch), int(ts), int(txn_first))
                state.producers[entry.producer_id] = entry
                if entry.txn_first_offset >= 0:
                    state.ongoing[entry.producer_id] = entry.txn_first_offset
            for pid, first, last in data["aborted"]:
                state.aborted.append(AbortedTxn(int(pid), int(first), int(last)))
                state._aborted_ends.append(int(last))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed producer-state snapshot: {exc}") from None
        return state

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PartitionProducers) and self.producers == other.producers
                and self.ongoing == other.ongoing and self.aborted == other.aborted)


def _record(entry: ProducerEntry, batch: BatchInfo, base_offset: int, last_offset: int) -> None:
    """Update a producer's entry with a batch appended at these offsets."""
    if batch.producer_epoch != entry.epoch:
        entry.epoch = batch.producer_epoch
        entry.batches.clear()
    entry.batches.append(Appended(batch.base_sequence, batch.last_sequence, base_offset, last_offset))
    if len(entry.batches) > BATCHES_KEPT:
        del entry.batches[0]
    entry.last_timestamp = max(entry.last_timestamp, batch.max_timestamp)
    if batch.transactional and entry.txn_first_offset < 0:
        entry.txn_first_offset = base_offset
