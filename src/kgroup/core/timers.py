"""Timers as data: a key, a deadline, and an operation the coordinator runs at expiry.

How this works: `schedule(key, deadline, op)` replaces whatever the key held. Entries live in
a heap with lazy deletion: the dict `_current` is the truth, the heap only says "look at this
key no earlier than t". Pushing a key's deadline later (every heartbeat does this) only
updates the dict; when the stale heap entry surfaces it is pushed again with the real
deadline. That keeps a heartbeat at O(1) amortised instead of a heap push per request.
Nothing here reads a clock: callers pass `now_ms`.

Every timer the coordinator arms is of one `TimerKind`, under a key built by that kind's
helper below (`classic_session_key`, ...): the only place a key's shape is written, so the
handler that arms a timer, the one that cancels it and the lab that reads its deadline
agree. The initial-rebalance delay and the rebalance timeout share the join key: arming
one replaces the other.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import Enum
from typing import Hashable


class TimerKind(Enum):
    """What a timer is for; the coordinator dispatches expiry on it."""

    CLASSIC_SESSION = "heartbeat"          # a classic member's session (or a new member's join)
    CLASSIC_JOIN = "join"                  # the rebalance timeout of a join phase
    CLASSIC_INITIAL_JOIN = "initial-join"  # group.initial.rebalance.delay.ms
    CLASSIC_SYNC = "sync"                  # members that never send SyncGroup
    CONSUMER_SESSION = "consumer-session"  # a consumer-group member's session
    CONSUMER_REVOKE = "consumer-revoke"    # a revocation owed past the rebalance timeout
    CONSUMER_REGEX = "consumer-regex"      # a new subscribed regex, resolved after the heartbeat
    OFFSETS_EXPIRY = "expire-offsets"      # offsets.retention.check.interval.ms
    TXN_TIMEOUT = "txn-timeout"            # a transaction's transaction.timeout.ms
    TXN_ID_EXPIRY = "expire-txn-ids"       # transactional.id.expiration.ms, checked periodically
    SHARE_SESSION = "share-session"        # a share-group member's session
    SHARE_INIT = "share-init"              # topics a share group newly subscribes to, initialized
    STREAMS_SESSION = "streams-session"    # a streams-group member's session
    STREAMS_REVOKE = "streams-revoke"      # a task revocation owed past the rebalance timeout
    STREAMS_INITIAL_DELAY = "streams-initial-delay"  # streams.initial.rebalance.delay.ms


# Keys hold the kind's string value, not the member: a key is hashed on every heartbeat,
# and an Enum member hashes through a Python-level __hash__ (several times slower).
_CLASSIC_SESSION = TimerKind.CLASSIC_SESSION.value
_CLASSIC_JOIN = TimerKind.CLASSIC_JOIN.value
_CLASSIC_SYNC = TimerKind.CLASSIC_SYNC.value
_CONSUMER_SESSION = TimerKind.CONSUMER_SESSION.value
_CONSUMER_REVOKE = TimerKind.CONSUMER_REVOKE.value
_SHARE_SESSION = TimerKind.SHARE_SESSION.value
_STREAMS_SESSION = TimerKind.STREAMS_SESSION.value
_STREAMS_REVOKE = TimerKind.STREAMS_REVOKE.value
_STREAMS_INITIAL_DELAY = TimerKind.STREAMS_INITIAL_DELAY.value


def classic_session_key(group_id: str, member_id: str) -> tuple:
    return (_CLASSIC_SESSION, group_id, member_id)


def classic_join_key(group_id: str) -> tuple:
    """The join phase's timer: the initial delay or the rebalance timeout, whichever is armed."""
    return (_CLASSIC_JOIN, group_id)


def classic_sync_key(group_id: str) -> tuple:
    return (_CLASSIC_SYNC, group_id)


def consumer_session_key(group_id: str, member_id: str) -> tuple:
    return (_CONSUMER_SESSION, group_id, member_id)


def consumer_revoke_key(group_id: str, member_id: str) -> tuple:
    return (_CONSUMER_REVOKE, group_id, member_id)


def consumer_regex_key(group_id: str) -> tuple:
    return (TimerKind.CONSUMER_REGEX.value, group_id)


def share_init_key(group_id: str) -> tuple:
    return (TimerKind.SHARE_INIT.value, group_id)


def share_session_key(group_id: str, member_id: str) -> tuple:
    return (_SHARE_SESSION, group_id, member_id)


def streams_session_key(group_id: str, member_id: str) -> tuple:
    return (_STREAMS_SESSION, group_id, member_id)


def streams_revoke_key(group_id: str, member_id: str) -> tuple:
    return (_STREAMS_REVOKE, group_id, member_id)


def streams_initial_delay_key(group_id: str) -> tuple:
    return (_STREAMS_INITIAL_DELAY, group_id)


OFFSETS_EXPIRY_KEY = (TimerKind.OFFSETS_EXPIRY.value,)
TXN_ID_EXPIRY_KEY = (TimerKind.TXN_ID_EXPIRY.value,)
_TXN_TIMEOUT = TimerKind.TXN_TIMEOUT.value


def txn_timeout_key(transactional_id: str) -> tuple:
    """The timeout of a transactional id's transaction in flight (one at a time)."""
    return (_TXN_TIMEOUT, transactional_id)


@dataclass(frozen=True, slots=True)
class TimerOp:
    """What to do at expiry: a kind the coordinator dispatches on, and its target."""

    kind: TimerKind
    group_id: str
    member_id: str = ""
    generation: int = -1
    # The initial-rebalance delay carries its own delay and what is left of the budget.
    delay_ms: int = 0
    remaining_ms: int = 0
    # A transaction's timeout names its producer (group_id is the transactional id and
    # generation the producer epoch): a later transaction of the same id is not aborted.
    producer_id: int = -1


class Timers:
    """A set of keyed deadlines; the earliest due ones are popped in deadline order."""

    __slots__ = ("_current", "_heap", "_seq", "_armed_low")

    def __init__(self) -> None:
        self._current: dict[Hashable, tuple[int, int, TimerOp]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._seq = 0
        # The earliest deadline armed earlier than a key's previous one since the last
        # `take_earliest_armed` (None: none): whoever keeps a wake-up for the earliest
        # deadline needs to look again only when this is before it.
        self._armed_low: int | None = None

    def schedule(self, key: Hashable, deadline_ms: int, op: TimerOp) -> None:
        """Arm `key` to run `op` at `deadline_ms`, replacing any earlier arming of it."""
        self._seq += 1
        old = self._current.get(key)
        self._current[key] = (deadline_ms, self._seq, op)
        if old is None or deadline_ms < old[0]:
            heapq.heappush(self._heap, (deadline_ms, self._seq, key))
            self._lower(deadline_ms)
        # else: the heap already holds an entry for this key that is no later; it will be
        # re-pushed with the new deadline when it surfaces.

    def extend(self, key: Hashable, deadline_ms: int) -> bool:
        """Move an armed `key` to `deadline_ms`, keeping its operation, as `schedule` would;
        False (and nothing armed) when the key is not armed. Saves building the operation
        again on the hot path (a heartbeat pushes its member's session deadline)."""
        old = self._current.get(key)
        if old is None:
            return False
        self._seq += 1
        self._current[key] = (deadline_ms, self._seq, old[2])
        if deadline_ms < old[0]:
            heapq.heappush(self._heap, (deadline_ms, self._seq, key))
            self._lower(deadline_ms)
        return True

    def _lower(self, deadline_ms: int) -> None:
        low = self._armed_low
        if low is None or deadline_ms < low:
            self._armed_low = deadline_ms

    def take_earliest_armed(self) -> int | None:
        """The earliest deadline that may have become the earliest since the last call (None:
        every deadline armed since is no earlier than the key's previous one), and forget it.
        A wake-up set for `next_deadline()` stays right while this is None or not before it:
        a deadline that only moved later makes it early, never late."""
        low, self._armed_low = self._armed_low, None
        return low

    def cancel(self, key: Hashable) -> None:
        self._current.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._current.get(key)
        return None if entry is None else entry[0]

    def operation(self, key: Hashable) -> TimerOp | None:
        """The operation armed under `key` (None: nothing armed)."""
        entry = self._current.get(key)
        return None if entry is None else entry[2]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._current

    def __len__(self) -> int:
        return len(self._current)

    def _head(self) -> tuple[int, int, Hashable] | None:
        """The heap's earliest live entry, or None. The heap is lazy (see ``schedule``): on
        the way it drops the entries of cancelled keys and re-pushes those of keys armed
        again since, with their current deadline and sequence."""
        heap = self._heap
        current = self._current
        while heap:
            head = heap[0]
            entry = current.get(head[2])
            if entry is None:
                heapq.heappop(heap)
            elif entry[0] != head[0] or entry[1] != head[1]:
                heapq.heapreplace(heap, (entry[0], entry[1], head[2]))
            else:
                return head
        return None

    def next_deadline(self) -> int | None:
        """The earliest deadline of any armed key, or None when nothing is armed."""
        head = self._head()
        return None if head is None else head[0]

    def pop_due(self, now_ms: int) -> tuple[Hashable, TimerOp] | None:
        """Remove and return the earliest (key, op) whose deadline is <= now_ms.

        Ties are broken by scheduling order so expiry is deterministic.
        """
        head = self._head()
        if head is None or head[0] > now_ms:
            return None
        heapq.heappop(self._heap)
        key = head[2]
        return key, self._current.pop(key)[2]
