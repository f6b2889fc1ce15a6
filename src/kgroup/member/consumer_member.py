"""The consumer-protocol group member (KIP-848, ConsumerGroupHeartbeat).

How this works: ``ConsumerMemberMachine.handle(event)`` takes one event (a user call, a heartbeat
response, topic names from metadata, the passing of time), each carrying ``now_ms``, and
returns the actions its driver must perform in order (send this heartbeat, run this
callback, commit these offsets, look these topic ids up). Nothing here reads a clock or
does I/O; ``next_deadline()`` says when the driver should send a ``Tick``. The coordinator
computes the assignment; the member only reconciles towards it and says what it owns.

States (one transition table, ``_TRANSITIONS``; an illegal move raises and changes nothing):

    UNSUBSCRIBED --subscribe--> JOINING (heartbeat with epoch 0, a full request)
    JOINING      --answer with an assignment--> RECONCILING, or STABLE if it is empty
    STABLE       --answer with a different assignment--> RECONCILING
    RECONCILING  --commit (auto-commit), revoke what left, assign what came--> ACKNOWLEDGING
                 (stays RECONCILING while topic ids of the assignment have no name yet)
    ACKNOWLEDGING --an immediate heartbeat with the owned partitions is answered-->
                 STABLE (target reached) or RECONCILING (a newer target came meanwhile)
    any of those --FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID--> FENCED (lost callback for
                 everything) --> JOINING at epoch 0
    any of those --max.poll.interval.ms without a poll--> STALE (lost callback, leave with
                 epoch -1); STALE --poll--> JOINING
    any of those --close / unsubscribe--> PREPARE_LEAVING (commit, revoke callback)
                 --> LEAVING (heartbeat with epoch -1, or -2 for a static member)
                 --answered or failed--> UNSUBSCRIBED
    any          --UNSUPPORTED_ASSIGNOR, INVALID_REQUEST, GROUP_AUTHORIZATION_FAILED,
                 FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, ...--> FATAL (lost callback)

FENCED, PREPARE_LEAVING and (unless names are missing) RECONCILING are left within the
step that entered them: the driver performs the returned actions in order, so a callback
has run before the request that follows it is sent. ``path`` lists the states the last
step went through.

Heartbeats: one in flight at a time, every ``heartbeat_interval_ms`` the coordinator gave.
A *full* request (when joining, and after any error, fencing or lost request) carries the
subscribed topics, the server assignor, the rebalance timeout (``max.poll.interval.ms``)
and the owned partitions; otherwise a *partial* one carries only what changed since the
last request sent (null means unchanged). Assignments name topics by id; names come from
Metadata v10+ through ``RefreshTopicNames`` / ``TopicNames``. ``owned`` is exactly what
the driver may consume: it shrinks in the step that emits RunRevoked/RunLost, and grows
only with RunAssigned.

Coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a failed request) emit
FindCoordinator; the member keeps its state and heartbeats (in full) once
``CoordinatorFound`` arrives. COORDINATOR_LOAD_IN_PROGRESS retries after
``retry_backoff_ms``. Responses to anything but the request in flight are ignored.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kgroup.error_codes import ErrorCode
from kgroup.member.actions import (
    CommitOffsets,
    Fatal,
    FindCoordinator,
    Partitions,
    RunAssigned,
    RunLost,
    RunRevoked,
)
from kgroup.member.classic_member import (
    Close,
    CommitAnswered,
    CoordinatorFound,
    CoordinatorLost,
    IllegalMemberTransition,
    MetadataUpdated,
    Poll,
    RequestFailed,
    Subscribe,
    Tick,
    Unsubscribe,
)
from kgroup.member.config import MemberConfig

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
UNCHANGED_TIMEOUT = -1
NAMES_RETRY_MS = 1_000

_COORDINATOR_GONE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT,
                    ErrorCode.NETWORK_EXCEPTION})
_FENCED = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})

TopicIdPartition = tuple[str, int]            # (topic id as a uuid string, partition)
TopicIdPartitions = frozenset[TopicIdPartition]


class ConsumerState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    PREPARE_LEAVING = "prepare_leaving"
    LEAVING = "leaving"
    FATAL = "fatal"
    STALE = "stale"


S = ConsumerState
_TRANSITIONS: dict[ConsumerState, frozenset[ConsumerState]] = {
    S.UNSUBSCRIBED: frozenset({S.JOINING}),
    S.JOINING: frozenset({S.RECONCILING, S.STABLE, S.FENCED, S.PREPARE_LEAVING, S.STALE,
                          S.FATAL}),
    S.RECONCILING: frozenset({S.ACKNOWLEDGING, S.STABLE, S.FENCED, S.PREPARE_LEAVING, S.STALE,
                              S.FATAL}),
    S.ACKNOWLEDGING: frozenset({S.STABLE, S.RECONCILING, S.FENCED, S.PREPARE_LEAVING, S.STALE,
                                S.FATAL}),
    S.STABLE: frozenset({S.RECONCILING, S.FENCED, S.PREPARE_LEAVING, S.STALE, S.FATAL}),
    S.FENCED: frozenset({S.JOINING}),
    S.PREPARE_LEAVING: frozenset({S.LEAVING, S.UNSUBSCRIBED}),
    S.LEAVING: frozenset({S.UNSUBSCRIBED}),
    S.STALE: frozenset({S.JOINING, S.UNSUBSCRIBED}),
    S.FATAL: frozenset(),
}
_IN_GROUP = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})


# -- events (besides the shared ones from classic_member) --------------------------------


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Topic names by id from Metadata v10+, as (topic id, name) pairs."""

    names: tuple[tuple[str, str], ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatAnswered:
    """The answer to a ``SendConsumerGroupHeartbeat``; ``assignment`` None means unchanged,
    else (topic id, partitions) pairs."""

    request_id: int
    error: ErrorCode
    now_ms: int
    member_id: str = ""
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    error_message: str = ""


Event = (Subscribe | Unsubscribe | Poll | Tick | CoordinatorFound | CoordinatorLost
         | MetadataUpdated | TopicNames | ConsumerGroupHeartbeatAnswered | CommitAnswered
         | RequestFailed | Close)


# -- request actions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendConsumerGroupHeartbeat:
    """One ConsumerGroupHeartbeat. None (or -1 for the timeout) means "unchanged"; ``owned``
    names topics by id. ``member_epoch`` -1/-2 is a leave; its answer only ends LEAVING."""

    request_id: int
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rebalance_timeout_ms: int = UNCHANGED_TIMEOUT
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    full: bool = False

    @property
    def is_leave(self) -> bool:
        return self.member_epoch < 0


@dataclass(frozen=True, slots=True)
class RefreshTopicNames:
    """Look these topic ids up (Metadata v10+), then send ``TopicNames``."""

    topic_ids: tuple[str, ...]


Action = (SendConsumerGroupHeartbeat | RefreshTopicNames | FindCoordinator | CommitOffsets
          | RunRevoked | RunAssigned | RunLost | Fatal)


@dataclass(frozen=True, slots=True)
class _Sent:
    """What the coordinator has been told, for partial requests."""

    subscription: tuple[str, ...]
    owned: TopicIdPartitions


# -- the member --------------------------------------------------------------------------


class ConsumerMemberMachine:
    """One consumer's membership in a consumer-protocol group; see the module comment.

    ``member_id`` is generated by the driver (ConsumerGroupHeartbeat v1 wants the client
    to pick it); with v0 it may be "" and the coordinator's answer fills it in.
    """

    def __init__(self, config: MemberConfig, member_id: str = "", now_ms: int = 0) -> None:
        self.config = config
        self.state = ConsumerState.UNSUBSCRIBED
        self.member_id = member_id
        self.member_epoch = JOIN_EPOCH
        self.subscription: tuple[str, ...] = ()
        self.owned: Partitions = frozenset()
        self.owned_ids: TopicIdPartitions = frozenset()
        self.target: TopicIdPartitions | None = None
        self.names: dict[str, str] = {}
        self.heartbeat_interval_ms = config.heartbeat_interval_ms
        self.coordinator_known = False
        self.fatal_error: ErrorCode | None = None
        self.closed = False
        self.path: list[ConsumerState] = []
        self._ids = 0
        self._in_flight: int | None = None
        self._leave_request: int | None = None
        self._sent: _Sent | None = None
        self._next_heartbeat = now_ms
        self._retry_at: int | None = None
        self._finding = False
        self._last_poll = now_ms
        self._names_wanted: frozenset[str] = frozenset()
        self._names_retry_at: int | None = None

    # -- queries --------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The member epoch, which OffsetCommit v9 checks (as the classic generation)."""
        return self.member_epoch

    @property
    def in_group(self) -> bool:
        """Whether offsets may be committed with this member's epoch."""
        return self.state in (S.RECONCILING, S.ACKNOWLEDGING, S.STABLE) and self.member_epoch > 0

    def next_deadline(self) -> int | None:
        """The earliest ``now_ms`` at which a ``Tick`` has something to do (None: never)."""
        if self.state not in _IN_GROUP or self.closed:
            return None
        times = [self._last_poll + self.config.max_poll_interval_ms]
        if self.coordinator_known and self._in_flight is None:
            times.append(max(self._next_heartbeat, self._retry_at or 0))
        if self._names_retry_at is not None:
            times.append(self._names_retry_at)
        return min(times)

    # -- transitions ----------------------------------------------------------------------

    def _to(self, new: ConsumerState) -> None:
        if new is self.state:
            return
        if new not in _TRANSITIONS[self.state]:
            raise IllegalMemberTransition(
                f"consumer member cannot go {self.state.name} -> {new.name}")
        self.state = new
        self.path.append(new)

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    # -- dispatch -------------------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """Apply one event; return the actions to perform, in order."""
        self.path = []
        out: list[Action] = []
        if self.state is S.FATAL:
            return out
        if self.closed and not isinstance(event, ConsumerGroupHeartbeatAnswered):
            return out
        getattr(self, "_on_" + type(event).__name__)(event, out)
        if self.state in _IN_GROUP and not self.closed:
            self._timers(event.now_ms, out)
        return out

    # -- user calls -----------------------------------------------------------------------

    def _on_Subscribe(self, ev: Subscribe, out: list[Action]) -> None:
        topics = tuple(sorted(set(ev.topics)))
        if not topics:
            self._on_Unsubscribe(Unsubscribe(ev.now_ms), out)
            return
        if topics == self.subscription and self.state is not S.UNSUBSCRIBED:
            return
        self.subscription = topics
        self._last_poll = ev.now_ms
        if self.state in (S.UNSUBSCRIBED, S.STALE):
            self._join(ev.now_ms)
        elif self.state in _IN_GROUP:
            self._next_heartbeat = ev.now_ms  # tell the coordinator now

    def _on_Unsubscribe(self, ev: Unsubscribe, out: list[Action]) -> None:
        self.subscription = ()
        if self.state in _IN_GROUP:
            self._leave_group(self._leave_epoch(), out)
        elif self.state is S.STALE:
            self._to(S.UNSUBSCRIBED)

    def _on_Close(self, ev: Close, out: list[Action]) -> None:
        self._on_Unsubscribe(Unsubscribe(ev.now_ms), out)
        self.closed = True

    def _on_Poll(self, ev: Poll, out: list[Action]) -> None:
        self._last_poll = ev.now_ms
        if self.state is S.STALE and self.subscription:
            self._join(ev.now_ms)

    # -- coordinator and metadata ---------------------------------------------------------

    def _on_CoordinatorFound(self, ev: CoordinatorFound, out: list[Action]) -> None:
        self.coordinator_known = True
        self._finding = False

    def _on_CoordinatorLost(self, ev: CoordinatorLost, out: list[Action]) -> None:
        self._coordinator_gone(ev.now_ms, out)

    def _on_RequestFailed(self, ev: RequestFailed, out: list[Action]) -> None:
        if ev.request_id == self._leave_request:
            self._leave_request = None
            if self.state is S.LEAVING:
                self._left(ev.now_ms)
        elif ev.request_id == self._in_flight:
            self._coordinator_gone(ev.now_ms, out)

    def _on_MetadataUpdated(self, ev: MetadataUpdated, out: list[Action]) -> None:
        return  # partition counts are the coordinator's business in this protocol

    def _on_TopicNames(self, ev: TopicNames, out: list[Action]) -> None:
        self.names.update(dict(ev.names))
        self._names_retry_at = None
        self._names_wanted = frozenset()
        if self.state in (S.RECONCILING, S.STABLE):
            self._reconcile(ev.now_ms, out)

    def _on_CommitAnswered(self, ev: CommitAnswered, out: list[Action]) -> None:
        if ev.error in _FENCED or ev.error is ErrorCode.STALE_MEMBER_EPOCH:
            self._next_heartbeat = ev.now_ms  # the heartbeat finds out where we stand

    def _on_Tick(self, ev: Tick, out: list[Action]) -> None:
        return  # timers run after every event

    # -- heartbeat responses --------------------------------------------------------------

    def _on_ConsumerGroupHeartbeatAnswered(self, ev: ConsumerGroupHeartbeatAnswered,
                                           out: list[Action]) -> None:
        if ev.request_id == self._leave_request:
            self._leave_request = None
            if self.state is S.LEAVING:
                self._left(ev.now_ms)
            return
        if ev.request_id != self._in_flight or self.state not in _IN_GROUP:
            return
        self._in_flight = None
        err = ev.error
        if err is ErrorCode.NONE:
            # 1. Take the epoch (and member id, with v0) and the interval we were given.
            if ev.member_id:
                self.member_id = ev.member_id
            self.member_epoch = ev.member_epoch
            if ev.heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = ev.heartbeat_interval_ms
            changed = self._sent is not None and self._sent.subscription != self.subscription
            self._next_heartbeat = ev.now_ms + (0 if changed else self.heartbeat_interval_ms)
            self._retry_at = None
            # 2. A new target, if the answer carries one (None: unchanged).
            if ev.assignment is not None:
                self.target = frozenset((t, p) for t, ps in ev.assignment for p in ps)
            elif self.target is None and self.state is S.JOINING:
                self.target = frozenset()
            # 3. An acknowledgement was answered: done, or on to the newer target.
            if self.state is S.ACKNOWLEDGING:
                self._to(S.STABLE if self.target == self.owned_ids else S.RECONCILING)
            self._reconcile(ev.now_ms, out)
        elif err in _FENCED:
            self._fenced(err, ev.now_ms, out)
        elif err in _COORDINATOR_GONE:
            self._coordinator_gone(ev.now_ms, out)
        elif err in _RETRY:
            self._sent = None
            self._retry_at = ev.now_ms + self.config.retry_backoff_ms
        else:
            self._fatal(err, ev.error_message or "ConsumerGroupHeartbeat failed", out)

    # -- timers ---------------------------------------------------------------------------

    def _timers(self, now: int, out: list[Action]) -> None:
        # 1. max.poll.interval.ms without a poll: STALE; the partitions are lost; leave.
        if now >= self._last_poll + self.config.max_poll_interval_ms:
            self._lose(out)
            self._send_leave(LEAVE_EPOCH, out)
            self._reset_membership()
            self._to(S.STALE)
            return
        # 2. Topic ids still without a name: ask again.
        if self._names_retry_at is not None and now >= self._names_retry_at:
            self._names_retry_at = None
            self._names_wanted = frozenset()
            self._want_names(now, out)
        # 3. The heartbeat: due by the interval, right after a reconciliation, or when
        #    the coordinator is found again.
        if not self.coordinator_known:
            if not self._finding:
                self._finding = True
                out.append(FindCoordinator())
            return
        if (self._in_flight is None and now >= self._next_heartbeat
                and (self._retry_at is None or now >= self._retry_at)):
            self._retry_at = None
            self._send_heartbeat(now, out)

    # -- steps ----------------------------------------------------------------------------

    def _join(self, now: int) -> None:
        """Start (over) at epoch 0 with a full request."""
        self._reset_membership()
        self._next_heartbeat = now
        self._to(S.JOINING)

    def _reset_membership(self) -> None:
        self.member_epoch = JOIN_EPOCH
        self.target = None
        self._in_flight = None
        self._sent = None
        self._retry_at = None
        self._names_retry_at = None
        self._names_wanted = frozenset()

    def _send_heartbeat(self, now: int, out: list[Action]) -> None:
        owned = self.owned_ids
        full = self._sent is None or self.member_epoch == JOIN_EPOCH
        sent = self._sent
        subs = self.subscription if full or sent is None or sent.subscription != self.subscription \
            else None
        owned_field = _by_topic(owned) if full or sent is None or sent.owned != owned else None
        rid = self._next_id()
        self._in_flight = rid
        self._sent = _Sent(self.subscription, owned)
        out.append(SendConsumerGroupHeartbeat(
            rid, self.config.group_id, self.member_id, self.member_epoch,
            self.config.group_instance_id,
            self.config.max_poll_interval_ms if full else UNCHANGED_TIMEOUT,
            subs, self.config.server_assignor if full else None, owned_field, full))

    def _reconcile(self, now: int, out: list[Action]) -> None:
        """Move what the driver consumes towards the target: commit, revoke, assign, ack."""
        if self.state not in (S.JOINING, S.RECONCILING, S.STABLE) or self.target is None:
            return
        target = self.target
        unresolved = frozenset(t for t, _ in target if t not in self.names)
        if unresolved:
            self._want_names(now, out, unresolved)
        revoke = self.owned_ids - target
        add = frozenset(tp for tp in target if tp[0] in self.names) - self.owned_ids
        if not revoke and not add:
            self._to(S.RECONCILING if unresolved else S.STABLE)
            return
        self._to(S.RECONCILING)
        # 1. Commit (auto-commit) and revoke what left, 2. assign what came,
        # 3. acknowledge at once with what we own now.
        self._revoke(revoke, out)
        self._set_owned(self.owned_ids | add)
        out.append(RunAssigned(self._named(add)))
        self._to(S.ACKNOWLEDGING)
        self._next_heartbeat = now

    def _want_names(self, now: int, out: list[Action],
                    ids: frozenset[str] | None = None) -> None:
        if ids is None:
            ids = frozenset(t for t, _ in (self.target or ()) if t not in self.names)
        if not ids or ids <= self._names_wanted:
            return
        self._names_wanted = self._names_wanted | ids
        self._names_retry_at = now + NAMES_RETRY_MS
        out.append(RefreshTopicNames(tuple(sorted(ids))))

    def _fenced(self, err: ErrorCode, now: int, out: list[Action]) -> None:
        """Our epoch is gone: everything we own is lost; rejoin at epoch 0, same id."""
        self._to(S.FENCED)
        self._lose(out)
        self._join(now)

    def _coordinator_gone(self, now: int, out: list[Action]) -> None:
        self.coordinator_known = False
        self._in_flight = None
        self._sent = None
        self._next_heartbeat = now
        if self.state is S.LEAVING:
            self._leave_request = None
            self._left(now)
            return
        if not self._finding and self.state in _IN_GROUP:
            self._finding = True
            out.append(FindCoordinator())

    def _leave_epoch(self) -> int:
        return STATIC_LEAVE_EPOCH if self.config.is_static else LEAVE_EPOCH

    def _leave_group(self, epoch: int, out: list[Action]) -> None:
        """Close or unsubscribe: commit and revoke everything, then say goodbye."""
        self._to(S.PREPARE_LEAVING)
        self._revoke(self.owned_ids, out)
        sent = self._send_leave(epoch, out)
        self._reset_membership()
        if sent:
            self._to(S.LEAVING)
        else:
            self._to(S.UNSUBSCRIBED)

    def _send_leave(self, epoch: int, out: list[Action]) -> bool:
        if not (self.coordinator_known and self.member_id):
            return False
        rid = self._next_id()
        self._leave_request = rid
        out.append(SendConsumerGroupHeartbeat(rid, self.config.group_id, self.member_id, epoch,
                                              self.config.group_instance_id))
        return True

    def _left(self, now: int) -> None:
        self._to(S.UNSUBSCRIBED)
        if self.subscription and not self.closed:
            self._join(now)  # subscribed again while leaving

    def _revoke(self, ids: TopicIdPartitions, out: list[Action]) -> None:
        if not ids:
            return
        named = self._named(ids)
        if self.config.auto_commit and self.member_epoch > 0:
            out.append(CommitOffsets(named, self.member_epoch, self.member_id))
        self._set_owned(self.owned_ids - ids)
        out.append(RunRevoked(named, self.member_epoch, self.member_id))

    def _lose(self, out: list[Action]) -> None:
        if self.owned_ids:
            lost = self.owned
            self._set_owned(frozenset())
            out.append(RunLost(lost))

    def _fatal(self, err: ErrorCode, message: str, out: list[Action]) -> None:
        self._lose(out)
        self._reset_membership()
        self.fatal_error = err
        self._to(S.FATAL)
        out.append(Fatal(err, message))

    def _set_owned(self, ids: TopicIdPartitions) -> None:
        self.owned_ids = ids
        self.owned = self._named(ids)

    def _named(self, ids: TopicIdPartitions) -> Partitions:
        return frozenset((self.names[t], p) for t, p in ids)


def _by_topic(parts: TopicIdPartitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return tuple((t, tuple(sorted(by_topic[t]))) for t in sorted(by_topic))
