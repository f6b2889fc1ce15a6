"""One share partition (KIP-932): the in-flight records of one topic partition for one share
group, and what happens to each of them.

How this works: the share partition keeps a window of offsets [start, end). Everything below
`start` is finished (acknowledged or archived); nothing at or past `end` has been delivered
yet. Every offset in the window has a `Slot`: its `RecordState`, how many times it has been
delivered, and while ACQUIRED, the member holding it and when its lock runs out. A
ShareFetch `acquire`s AVAILABLE offsets of the window and new ones past `end` (as long as
the window holds fewer than `max_in_flight` offsets), batch by batch, archiving at once the
offsets of transaction markers and (read_committed) of aborted transactions, which are never
delivered; a ShareAcknowledge (or
the acknowledgements riding on a ShareFetch) moves a member's ACQUIRED offsets on: ACCEPT
to ACKNOWLEDGED, REJECT (and GAP) to ARCHIVED, RELEASE back to AVAILABLE, and RENEW (KIP-1222,
where the group's `share.renew.acknowledge.enable` allows it) keeps it ACQUIRED by the same
member in the same delivery with a fresh lock of `record_lock_ms` from now. A lock that runs
out, and a member that leaves or whose connection closes, put its offsets back to
AVAILABLE, except that an offset delivered `delivery_limit` times is ARCHIVED instead.
Whenever the offsets at `start` are finished, `start` moves past them.

Dead letters (KIP-1191): an offset archived because its member REJECTed it, or because it
was delivered `delivery_limit` times, is also noted in `dead_letters` (offset, delivery
count, why), which the broker takes (`take_dead_letters`) once the state that archived it is
written, and copies to the group's dead-letter topic if it has one. The offset is archived
whatever becomes of that copy, as in Kafka.

Every move of one offset goes through `TRANSITIONS` (state, move) -> state; a move the
table lacks raises `IllegalShareTransition`. Acknowledgements of one partition are checked
in full before any is applied, so a refused acknowledgement changes nothing.

What is durable (`persisted()`): the start offset and the window as runs of (first, last,
state, delivery count), an ACQUIRED offset written as it was before that delivery began:
AVAILABLE, with the delivery not counted. A lock does not survive a restart, and as in Kafka
4.4 (whose share state is written when a delivery ends, never when it starts) a delivery a
crash cuts short does not count: after the crash the offset is delivered again with the same
count, whether or not its neighbours' changes were written meanwhile. A delivery that ended
(released, its lock ran out, its member gone) counts. As in Kafka, a write carries the start
offset as it stood before the change being written (`written_start`: Kafka's share partition
persists first and moves its start offset after), so DescribeShareGroupOffsets, which reads
what was written, trails by one change; the offsets between that start and the real one are
written ARCHIVED, so a reload moves past them. Nothing here reads a clock: callers
pass `now_ms`; expired locks are noticed when a call sees them (`expire`), and `lapsed` says
that one ran out since the caller last wrote the state (Kafka writes a lock's end when it
happens; the broker does when it sees `lapsed`, and clears it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Iterable, Sequence

from kgroup.core.errors import ErrorCode
from kgroup.core.records import ShareStateBatch, ShareStateValue


class RecordState(IntEnum):
    """The state of one in-flight offset; the values are Kafka's (RecordState.java)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    """ShareFetch / ShareAcknowledge acknowledge types (Kafka's numbers)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4                      # KIP-1222 (ShareFetch / ShareAcknowledge v2)


class Move(Enum):
    """What can happen to one offset."""

    ACQUIRE = "acquire"            # a ShareFetch hands it to a member
    ACCEPT = "accept"
    REJECT = "reject"
    GAP = "gap"                    # the member says there is no record there
    RELEASE = "release"            # the member gives it back
    RENEW = "renew"                # the member keeps it for another lock duration (KIP-1222)
    LOCK_EXPIRED = "lock expired"
    MEMBER_GONE = "member gone"    # its session closed, its connection dropped, it left
    ARCHIVE = "archive"            # delivery limit reached, control record, below the log start


S, M = RecordState, Move

# (state, move) -> next state. A move that makes an offset AVAILABLE lands in ARCHIVED
# instead once it was delivered `delivery_limit` times (`_settle`).
TRANSITIONS: dict[tuple[RecordState, Move], RecordState] = {
    (S.AVAILABLE, M.ACQUIRE): S.ACQUIRED,
    (S.AVAILABLE, M.ARCHIVE): S.ARCHIVED,
    (S.ACQUIRED, M.ACCEPT): S.ACKNOWLEDGED,
    (S.ACQUIRED, M.REJECT): S.ARCHIVED,
    (S.ACQUIRED, M.GAP): S.ARCHIVED,
    (S.ACQUIRED, M.RELEASE): S.AVAILABLE,
    (S.ACQUIRED, M.RENEW): S.ACQUIRED,
    (S.ACQUIRED, M.LOCK_EXPIRED): S.AVAILABLE,
    (S.ACQUIRED, M.MEMBER_GONE): S.AVAILABLE,
    (S.ACQUIRED, M.ARCHIVE): S.ARCHIVED,
}

_ACK_MOVES = {AckType.GAP: M.GAP, AckType.ACCEPT: M.ACCEPT, AckType.RELEASE: M.RELEASE,
              AckType.REJECT: M.REJECT, AckType.RENEW: M.RENEW}
_FINISHED = (S.ACKNOWLEDGED, S.ARCHIVED)


class DeadLetterReason(Enum):
    """Why an archived offset goes to the dead-letter queue; the text is Kafka 4.4's
    `__dlq.errors.message` header."""

    REJECTED = "Offset rejected by client."
    DELIVERY_LIMIT = "Offset delivery count exceeded the threshold."


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An offset archived for a reason the dead-letter queue records (KIP-1191)."""

    offset: int
    delivery_count: int
    reason: DeadLetterReason


class IllegalShareTransition(RuntimeError):
    """A bug: a move the transition table does not allow."""


@dataclass(frozen=True, slots=True)
class ShareLimits:
    """The group configs a share partition runs with."""

    record_lock_ms: int = 30_000          # share.record.lock.duration.ms
    delivery_limit: int = 5               # share.delivery.count.limit
    max_in_flight: int = 2_000            # share.partition.max.record.locks
    # share.isolation.level read_committed: the caller reads up to the last stable offset
    # and marks the batches of aborted transactions (LogBatch.aborted).
    read_committed: bool = False
    renew_enabled: bool = True            # share.renew.acknowledge.enable (KIP-1222)


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Offsets first..last handed to a member in one ShareFetch, delivered `delivery_count`
    times (this delivery included)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A record batch of the partition log as acquisition sees it."""

    base_offset: int
    last_offset: int
    control: bool = False                 # transaction markers are never delivered
    aborted: bool = False                 # nor, read_committed, an aborted transaction's records


@dataclass(frozen=True, slots=True)
class AckBatch:
    """Acknowledge offsets first..last: one type for all, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class Slot:
    """One in-flight offset (mutable: a share partition changes thousands per second)."""

    __slots__ = ("state", "count", "owner", "deadline", "head")

    def __init__(self, state: RecordState, count: int) -> None:
        self.state = state
        self.count = count
        self.owner: str | None = None
        self.deadline = 0
        # The offset begins an acquired range (Kafka's in-flight batch): a later delivery
        # lists the offsets from here in a range of their own, as Kafka does.
        self.head = False


class SharePartition:
    """The in-flight window of one (share group, topic partition)."""

    def __init__(self, start_offset: int, state_epoch: int = 0,
                 batches: Iterable[ShareStateBatch] = (), limits: ShareLimits | None = None) -> None:
        self.limits = limits or ShareLimits()
        self.state_epoch = state_epoch
        self.start = start_offset
        self.end = start_offset
        self.slots: dict[int, Slot] = {}
        self.lapsed = False               # a lock ran out since the state was last written
        self.renewed_only = False         # the last acknowledge only renewed locks
        self.dead_letters: list[DeadLetter] = []     # archived for KIP-1191, not yet taken
        for b in batches:
            for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
                self.slots[offset] = Slot(RecordState(b.state), b.delivery_count)
            self.end = max(self.end, b.last_offset + 1)
        for offset in range(self.start, self.end):       # holes in what was written: never delivered
            self.slots.setdefault(offset, Slot(S.AVAILABLE, 0))
        self._advance()
        self.written_start = self.start        # the start offset the next write carries

    @classmethod
    def from_persisted(cls, value: ShareStateValue, limits: ShareLimits | None = None) -> "SharePartition":
        return cls(value.start_offset, value.state_epoch, value.batches, limits)

    # ---- moves ------------------------------------------------------------------------------

    def _move(self, offset: int, slot: Slot, move: Move) -> None:
        nxt = TRANSITIONS.get((slot.state, move))
        if nxt is None:
            raise IllegalShareTransition(f"offset {offset}: {slot.state.name} --{move.value}-->")
        if nxt is S.AVAILABLE and slot.count >= self.limits.delivery_limit:
            nxt = S.ARCHIVED
            self.dead_letters.append(DeadLetter(offset, slot.count, DeadLetterReason.DELIVERY_LIMIT))
        elif move is M.REJECT:
            self.dead_letters.append(DeadLetter(offset, slot.count, DeadLetterReason.REJECTED))
        slot.state = nxt
        if nxt is not S.ACQUIRED:
            slot.owner = None
            slot.deadline = 0

    def _advance(self) -> None:
        """Move `start` past finished offsets at the front of the window."""
        slots, start = self.slots, self.start
        while start < self.end:
            slot = slots.get(start)
            if slot is None or slot.state not in _FINISHED:
                break
            del slots[start]
            start += 1
        self.start = start

    # ---- ShareFetch -------------------------------------------------------------------------

    def first_to_read(self, log_start: int, log_end: int, now_ms: int) -> int | None:
        """The first offset a fetch may acquire (where to read the log from), or None."""
        self.expire(now_ms)
        self.trim_to_log_start(log_start)
        for offset in range(self.start, self.end):
            if self.slots[offset].state is S.AVAILABLE:
                return offset
        if self.end < log_end and self.end - self.start < self.limits.max_in_flight:
            return max(self.end, log_start)
        return None

    def acquire(self, member_id: str, batches: Sequence[LogBatch], max_records: int,
                now_ms: int, record_limit: bool = False, batch_size: int = 0) -> list[AcquiredRange]:
        """Hand AVAILABLE offsets of `batches` (read from the log in order) to `member_id`, up
        to `max_records`: batch-optimized, finishing the batch it is in (Kafka aligns to batch
        boundaries); `record_limit` (KIP-1206), never more than `max_records`. The ranges
        listed: contiguous offsets of one delivery count, and, batch-optimized, offsets never
        delivered before are cut at the first log batch that begins `batch_size` (> 0) or
        more offsets into their range (KIP-1206's BatchSize); a range cut once stays cut."""
        self.expire(now_ms)
        limits, slots = self.limits, self.slots
        deadline = now_ms + limits.record_lock_ms
        got: list[AcquiredRange] = []
        taken = 0
        full = False
        fresh_first = -1                  # where the current range of new offsets began
        for batch in batches:
            if taken >= max_records or full:
                break
            for offset in range(max(batch.base_offset, self.start), batch.last_offset + 1):
                if record_limit and taken >= max_records:
                    full = True
                    break
                fresh = offset >= self.end
                if fresh:
                    if self.end - self.start >= limits.max_in_flight:
                        full = True
                        break
                    for hole in range(self.end, offset + 1):   # compacted away: never delivered
                        slots[hole] = Slot(S.AVAILABLE, 0)
                    self.end = offset + 1
                slot = slots[offset]
                if slot.state is not S.AVAILABLE:
                    continue
                if batch.control or batch.aborted or slot.count >= limits.delivery_limit:
                    if not (batch.control or batch.aborted):
                        self.dead_letters.append(DeadLetter(offset, slot.count, DeadLetterReason.DELIVERY_LIMIT))
                    self._move(offset, slot, M.ARCHIVE)
                    continue
                self._move(offset, slot, M.ACQUIRE)
                slot.count += 1
                slot.owner = member_id
                slot.deadline = deadline
                taken += 1
                if fresh and (fresh_first < 0 or (not record_limit and 0 < batch_size <= offset - fresh_first
                                                   and offset == batch.base_offset)):
                    fresh_first = offset
                    slot.head = True
                last = got[-1] if got else None
                if last is not None and last.last_offset == offset - 1 and last.delivery_count == slot.count \
                        and not slot.head:
                    got[-1] = AcquiredRange(last.first_offset, offset, slot.count)
                else:
                    got.append(AcquiredRange(offset, offset, slot.count))
        self._advance()
        return got

    # ---- acknowledgements -------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int,
                    renew: bool = False) -> ErrorCode:
        """Apply one partition's acknowledgements, all or none: NONE, INVALID_REQUEST (bad
        ranges or types; RENEW unless `renew`, the request's IsRenewAck) or
        INVALID_RECORD_STATE (an offset this member does not hold; a RENEW where the group
        does not enable it). Only RENEW moves nothing durable (`renewed_only` says so)."""
        self.expire(now_ms)
        plan: list[tuple[int, Slot, Move]] = []
        previous_last = -1
        for b in batches:
            span = b.last_offset - b.first_offset + 1
            if span <= 0 or b.first_offset <= previous_last or len(b.types) not in (1, span):
                return ErrorCode.INVALID_REQUEST
            previous_last = b.last_offset
            if any(kind not in _ACK_MOVES.keys() for kind in b.types):
                return ErrorCode.INVALID_REQUEST
            if not renew and AckType.RENEW in b.types:
                return ErrorCode.INVALID_REQUEST
            if b.last_offset >= self.end:
                return ErrorCode.INVALID_RECORD_STATE   # never delivered (checked before any loop)
            # Offsets below the start are finished already (archived meanwhile): skipped
            # without a pass over them, however far back the range reaches.
            for offset in range(max(b.first_offset, self.start), b.last_offset + 1):
                kind = b.types[0] if len(b.types) == 1 else b.types[offset - b.first_offset]
                slot = self.slots.get(offset)
                if slot is None or slot.state is not S.ACQUIRED or slot.owner != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                if kind == AckType.RENEW and not self.limits.renew_enabled:
                    return ErrorCode.INVALID_RECORD_STATE
                plan.append((offset, slot, _ACK_MOVES[AckType(kind)]))
        self.renewed_only = bool(plan) and all(move is M.RENEW for _, _, move in plan)
        if self.renewed_only:
            # A renewed lock is an in-memory timer, as in Kafka: nothing to write.
            for offset, slot, move in plan:
                self._move(offset, slot, move)
                slot.deadline = now_ms + self.limits.record_lock_ms
            return ErrorCode.NONE
        self.written_start = self.start
        for offset, slot, move in plan:
            self._move(offset, slot, move)
            if move is M.RENEW:
                slot.deadline = now_ms + self.limits.record_lock_ms
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> bool:
        """Put back everything `member_id` holds (it left or its connection closed)."""
        self.written_start = self.start
        changed = False
        for offset in range(self.start, self.end):
            slot = self.slots[offset]
            if slot.state is S.ACQUIRED and slot.owner == member_id:
                self._move(offset, slot, M.MEMBER_GONE)
                changed = True
        self._advance()
        return changed

    def expire(self, now_ms: int) -> bool:
        """Put back every offset whose lock ran out by `now_ms`."""
        changed = False
        before = self.start
        for offset in range(self.start, self.end):
            slot = self.slots[offset]
            if slot.state is S.ACQUIRED and slot.deadline <= now_ms:
                self._move(offset, slot, M.LOCK_EXPIRED)
                changed = True
        if changed:
            self.written_start = before
            self.lapsed = True
            self._advance()
        return changed

    def trim_to_log_start(self, log_start: int) -> None:
        """Records below the log start were deleted (retention): they are done with."""
        if log_start <= self.start:
            return
        for offset in range(self.start, min(log_start, self.end)):
            slot = self.slots[offset]
            if slot.state in (S.AVAILABLE, S.ACQUIRED):
                self._move(offset, slot, M.ARCHIVE)
        if self.end < log_start:
            self.slots.clear()
            self.start = self.end = log_start
        self._advance()

    def take_dead_letters(self) -> list[DeadLetter]:
        """The dead letters noted since the last call (in the order they were archived)."""
        taken, self.dead_letters = self.dead_letters, []
        return taken

    # ---- reading ----------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When the earliest lock runs out (None: no offset is acquired)."""
        deadlines = [s.deadline for s in self.slots.values() if s.state is S.ACQUIRED]
        return min(deadlines) if deadlines else None

    def held_by(self, member_id: str) -> list[int]:
        """Offsets `member_id` holds now."""
        return [o for o in range(self.start, self.end)
                if self.slots[o].state is S.ACQUIRED and self.slots[o].owner == member_id]

    def counts(self) -> dict[RecordState, int]:
        """How many in-flight offsets are in each state."""
        out = {state: 0 for state in RecordState}
        for slot in self.slots.values():
            out[slot.state] += 1
        return out

    def persisted(self) -> ShareStateValue:
        """The durable view: start offset and runs of (state, delivery count), an ACQUIRED
        offset as AVAILABLE with the count it had before this delivery (see the module doc)."""
        runs: list[ShareStateBatch] = []
        if self.written_start < self.start:     # finished since the start the write carries
            runs.append(ShareStateBatch(self.written_start, self.start - 1, S.ARCHIVED, 0))
        for offset in range(self.start, self.end):
            slot = self.slots[offset]
            state, count = slot.state, slot.count
            if state is S.ACQUIRED:
                state, count = S.AVAILABLE, count - 1
            last = runs[-1] if runs else None
            if last is not None and last.state == state and last.delivery_count == count:
                runs[-1] = ShareStateBatch(last.first_offset, offset, state, count)
            else:
                runs.append(ShareStateBatch(offset, offset, state, count))
        return ShareStateValue(self.state_epoch, min(self.written_start, self.start), tuple(runs))
