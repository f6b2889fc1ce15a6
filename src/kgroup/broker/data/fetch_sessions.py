"""Fetch sessions (KIP-227): the session cache, and what each Fetch does to it.

How it works: a Fetch (v7+) carries a session id and epoch. `FetchSessionCache.plan` reads
them, changes the cache as Kafka's FetchManager does and says what to read (`FetchPlan`);
the handler reads those partitions, and `FetchSessionCache.answer` says which of them go in
the answer and with which session id. No I/O, no clock: the caller passes `now_ms`, and a
`random.Random` makes the session ids.

- epoch 0 (INITIAL_EPOCH), a full fetch: the session id it names (if any) is closed; the
  partitions it lists are read, and the answer opens a new session of them (a positive
  random id, epoch 1 expected next) if the cache has room or can evict one, else id 0.
- epoch -1 (FINAL_EPOCH): the session it names is closed; a sessionless full fetch (id 0).
- epoch > 0 (or any other): an incremental fetch of session `id`. An id the cache does not
  hold is FETCH_SESSION_ID_NOT_FOUND, another epoch than the session's INVALID_FETCH_SESSION_EPOCH,
  a session made with topic ids asked without them (or the reverse: v13 is the line)
  FETCH_SESSION_TOPIC_ID_ERROR; every error answer has session id 0 and no partitions.
  Otherwise the partitions it lists are added to the session (or their fetch parameters
  updated), `forgotten_topics_data` removed, and every partition of the session is read, in
  the session's order; the session's epoch moves on (wrapping from 2^31-1 to 1). If the
  session is left with no partition it is closed and the fetch is sessionless.
- The answer of an incremental fetch lists only partitions with something to say: records,
  an error, or a high watermark or log start offset other than the one last answered (a
  partition with an error is answered again once the error is gone). A partition that
  returned records moves to the end of the session, so the next fetch reads the others first
  (fair shares of max_bytes). If another fetch of the same session moved the epoch on while
  this one waited, this one is answered INVALID_FETCH_SESSION_EPOCH (with the session id).
- A fetch throttled by a client quota (`throttled`) is answered with no partitions at all,
  and its read changes nothing here: a full fetch opens no session (id 0), an incremental
  one keeps what its session last answered (its epoch has moved on, as on arrival) and
  names its session, or INVALID_FETCH_SESSION_EPOCH as above (Kafka's getThrottledResponse).

The cache (Kafka's `max.incremental.fetch.session.cache.slots`, 1000) evicts when full, as
Kafka's does: the least recently used session if unused for more than `eviction_ms` (two
minutes); else the "least valuable" evictable session — ordered by (privileged, partitions,
id), followers' sessions being privileged — if the new one is worth at least as much. A
session becomes evictable by everyone once older than `eviction_ms`; a consumer's session is
evictable by followers at once. (Kafka splits the slots over 8 shards to spread its locks;
one event loop needs one cache.)
"""

from __future__ import annotations

import enum
import random
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.error_codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1
# Kafka's max.incremental.fetch.session.cache.slots and MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
CACHE_SLOTS = 1000
EVICTION_MS = 120_000
# The first Fetch version with sessions, and the first that names topics by id.
SESSIONS_FROM = 7
TOPIC_IDS_FROM = 13

# A partition as a session knows it: (topic name, or topic id from v13, partition index).
Key = tuple[Hashable, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: FINAL_EPOCH stays, 2^31-1 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass
class CachedPartition:
    """One partition of a session: the fetch parameters last asked for it (`ask`, the
    request's partition entry, opaque here) and what was last answered."""

    ask: Any
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass
class FetchSession:
    id: int
    privileged: bool          # a follower's
    uses_topic_ids: bool      # made by a v13+ fetch
    created_ms: int
    last_used_ms: int
    epoch: int                # the epoch the next incremental fetch must carry
    partitions: dict[Key, CachedPartition] = field(default_factory=dict)   # in reading order
    # The size and evictability as of the last touch (Kafka keys its eviction order on them).
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False


class PlanKind(enum.Enum):
    SESSIONLESS = "sessionless"   # answer everything, session id 0
    FULL = "full"                 # answer everything, open a session of it
    INCREMENTAL = "incremental"   # read the session's partitions, answer what changed
    ERROR = "error"               # read nothing, answer `error` with session id 0


@dataclass(frozen=True)
class FetchPlan:
    kind: PlanKind
    asks: tuple[tuple[Key, Any], ...] = ()    # what to read, in order
    error: ErrorCode = ErrorCode.NONE
    session: FetchSession | None = None
    expected_epoch: int = 0                   # (incremental) the session's epoch after this fetch
    privileged: bool = False
    uses_topic_ids: bool = False


@dataclass(frozen=True)
class PartitionRead:
    """What the read found for one partition (what decides whether it is answered)."""

    key: Key
    error_code: int
    high_watermark: int
    log_start_offset: int
    has_records: bool


@dataclass(frozen=True)
class Answer:
    error: ErrorCode
    session_id: int
    keep: tuple[bool, ...]     # per outcome: whether it goes in the answer


class FetchSessionCache:
    """The sessions of one broker (see the module)."""

    def __init__(self, slots: int = CACHE_SLOTS, eviction_ms: int = EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        self.slots = slots
        self.eviction_ms = eviction_ms
        self.rng = rng if rng is not None else random.Random()
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    # ---- a fetch arrives ----------------------------------------------------------------

    def plan(self, version: int, session_id: int, epoch: int, follower: bool,
             asks: Sequence[tuple[Key, Any]], forgotten: Iterable[Key], now_ms: int) -> FetchPlan:
        """What a fetch with this session id and epoch reads (see the module); changes the
        cache (closes, updates, touches sessions) as Kafka does on arrival."""
        uses_ids = version >= TOPIC_IDS_FROM
        if version < SESSIONS_FROM:
            session_id, epoch = INVALID_SESSION_ID, FINAL_EPOCH
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            kind = PlanKind.SESSIONLESS if epoch == FINAL_EPOCH else PlanKind.FULL
            return FetchPlan(kind, tuple(asks), privileged=follower, uses_topic_ids=uses_ids)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchPlan(PlanKind.ERROR, error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchPlan(PlanKind.ERROR, error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_ids:
            return FetchPlan(PlanKind.ERROR, error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        for key, ask in asks:
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = CachedPartition(ask)
            else:
                cached.ask = ask
        for key in forgotten:
            session.partitions.pop(key, None)
        if not session.partitions:
            self.remove(session.id)
            return FetchPlan(PlanKind.SESSIONLESS, tuple(asks), privileged=follower, uses_topic_ids=uses_ids)
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return FetchPlan(PlanKind.INCREMENTAL, tuple((k, c.ask) for k, c in session.partitions.items()),
                         session=session, expected_epoch=session.epoch, privileged=follower,
                         uses_topic_ids=uses_ids)

    # ---- its answer ---------------------------------------------------------------------

    def answer(self, plan: FetchPlan, outcomes: Sequence[PartitionRead], now_ms: int) -> Answer:
        """The answer's error, session id and partitions for what the read of `plan` found."""
        everything = (True,) * len(outcomes)
        if plan.kind is PlanKind.ERROR:
            return Answer(plan.error, INVALID_SESSION_ID, (False,) * len(outcomes))
        if plan.kind is PlanKind.SESSIONLESS:
            return Answer(ErrorCode.NONE, INVALID_SESSION_ID, everything)
        if plan.kind is PlanKind.FULL:
            asks = dict(plan.asks)
            partitions = {o.key: CachedPartition(asks.get(o.key), o.high_watermark, o.log_start_offset)
                          for o in outcomes}
            return Answer(ErrorCode.NONE, self.create(plan.privileged, plan.uses_topic_ids, partitions, now_ms),
                          everything)
        session = plan.session
        assert session is not None
        if session.epoch != plan.expected_epoch:
            # Another fetch of this session came while this one waited (a duplicate).
            return Answer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, (False,) * len(outcomes))
        keep = []
        for o in outcomes:
            cached = session.partitions.get(o.key)
            answered = cached is None or self._changed(cached, o)
            keep.append(answered)
            if cached is not None and answered and o.has_records:
                # Round robin: a partition that got records is read last next time.
                del session.partitions[o.key]
                session.partitions[o.key] = cached
        return Answer(ErrorCode.NONE, session.id, tuple(keep))

    @staticmethod
    def throttled(plan: FetchPlan) -> Answer:
        """The answer's error and session id when a quota throttles the fetch (no partitions,
        nothing remembered; see the module)."""
        session = plan.session
        if plan.kind is not PlanKind.INCREMENTAL or session is None:
            return Answer(ErrorCode.NONE, INVALID_SESSION_ID, ())
        if session.epoch != plan.expected_epoch:
            return Answer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, ())
        return Answer(ErrorCode.NONE, session.id, ())

    @staticmethod
    def _changed(cached: CachedPartition, o: PartitionRead) -> bool:
        """Whether an incremental answer lists this partition (and remember what it says)."""
        respond = o.has_records
        if cached.high_watermark != o.high_watermark:
            respond = True
            cached.high_watermark = o.high_watermark
        if cached.log_start_offset != o.log_start_offset:
            respond = True
            cached.log_start_offset = o.log_start_offset
        if o.error_code:
            # Answered again once the error is gone.
            cached.high_watermark = -1
            respond = True
        return respond

    # ---- the cache ----------------------------------------------------------------------

    def create(self, privileged: bool, uses_topic_ids: bool, partitions: dict[Key, CachedPartition],
               now_ms: int) -> int:
        """A new session of `partitions` if there is room (or a session to evict): its id,
        else INVALID_SESSION_ID."""
        if len(self.sessions) >= self.slots and not self._evict(privileged, len(partitions), now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_id(), privileged, uses_topic_ids, now_ms, now_ms,
                               next_epoch(INITIAL_EPOCH), partitions)
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _new_id(self) -> int:
        while True:
            candidate = self.rng.randint(1, INT32_MAX - 1)
            if candidate not in self.sessions:
                return candidate

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used now: its place in the eviction order."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.created_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def _evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Make room for a new session (privileged or not, of `size` partitions), Kafka's way:
        a stale session goes first; else the least valuable evictable one, if the new one is
        worth at least as much."""
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            victim = stale
        else:
            evictable = [s for s in self.sessions.values()
                         if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
            if not evictable:
                return False
            victim = min(evictable, key=lambda s: (s.privileged, s.cached_size, s.id))
            if (privileged, size, 0) < (victim.privileged, victim.cached_size, victim.id):
                return False
        self.remove(victim.id)
        self.evictions += 1
        return True
