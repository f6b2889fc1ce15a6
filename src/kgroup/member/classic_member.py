"""The classic-protocol group member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).

How this works: ``ClassicMemberMachine.handle(event)`` takes one event (a user call, a response,
the passing of time), each carrying ``now_ms``, and returns the actions its driver must
perform in order (send this request, run this callback, commit these offsets). Nothing here
reads a clock or does I/O; ``next_deadline()`` says when the driver should send a ``Tick``.
The events and actions are in ``classic_events``.

States (one transition table, ``_TRANSITIONS``; an illegal move raises and changes nothing):

    UNJOINED --subscribe / set protocols / poll after a poll timeout--> JOINING
    JOINING  --JoinGroup ok--> SYNCING --SyncGroup ok--> STABLE
    JOINING  --MEMBER_ID_REQUIRED--> JOINING (same state, resend with the given id)
    SYNCING / STABLE --REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
                       subscription or (leader) metadata change, Rejoin--> JOINING
    any      --poll timeout (max.poll.interval.ms)--> UNJOINED (partitions lost, leave)
    SYNCING  --an unexpected SyncGroup error--> JOINING (the error raised once: Failed)
    any      --FENCED_INSTANCE_ID or a non-retriable error--> FATAL
    any      --close--> LEFT

Two kinds of group. With protocol type ``consumer`` the member subscribes to topics, its
leader assigns partitions with a client-side assignor, and it owns partitions. With any
other protocol type the metadata and assignments are opaque: the member offers the
protocols it is given (``SetProtocols``, or ``metadata_for`` of what it holds at each
join), its leader's assignment comes from the driver
(``RunAssign`` / ``AssignmentsComputed``), and it holds one assignment (``assignment``).

Eager rebalancing revokes everything held before it rejoins. Cooperative (KIP-429, when
every configured assignor supports it, or when a member of another protocol type is
configured so) keeps what it holds while rejoining; a consumer then revokes only the
partitions the new assignment takes away, and rejoins for a second round so they can be
handed to their new owner (an opaque member gets the new assignment and decides itself).
ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID mean what it held already belongs to someone else:
it is *lost*, not revoked. ``owned`` is exactly what the driver may consume: it shrinks in
the same step that emits RunRevoked/RunLost, and grows only with RunAssigned.

Losing before the coordinator gives away (with ``lose_before_expiry``, as a ``Membership``
has it). The coordinator hands a member's share to others once it has not heard from it
for the session timeout (or, mid-rebalance, the rebalance timeout). The member counts from
the send time of its last request the coordinator answered in its generation
(``_alive_at``): the coordinator received it later, so its deadline is later too. Past
``min(session, rebalance timeout) - margin`` without such an answer (the margin is the
heartbeat interval, at most half the limit, for the member's own timer running late) the
member gives up what it holds as lost and rejoins. The count pauses while a JoinGroup or
SyncGroup is in flight: the coordinator keeps a member whose join or sync it holds, and a
request that fails brings the count back at once.

Coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) emit FindCoordinator; the
member keeps its state and resends what it was doing once ``CoordinatorFound`` arrives.
COORDINATOR_LOAD_IN_PROGRESS retries after ``retry_backoff_ms``. Every request action has a
``request_id``; responses to anything but the request the member waits for are ignored.
"""

from __future__ import annotations

import enum
import struct

from kgroup.assignors import (
    COOPERATIVE,
    Assignment,
    ClientMember,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.assignors.consumer_protocol import ConsumerProtocolError, encode_sticky_user_data
from kgroup.error_codes import ErrorCode
from kgroup.member.actions import (
    CommitOffsets,
    Failed,
    Fatal,
    FindCoordinator,
    Partitions,
    RunAssigned,
    RunLost,
    RunRevoked,
)
from kgroup.member.classic_events import (
    NO_GENERATION,
    PROTOCOL_TYPE,
    Action,
    AssignmentsComputed,
    Close,
    CommitAnswered,
    CoordinatorFound,
    CoordinatorLost,
    Event,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MetadataUpdated,
    Poll,
    Rejoin,
    RequestFailed,
    RunAssign,
    RunOnAssignment,
    RunOpaqueAssigned,
    RunOpaqueLost,
    RunOpaqueRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SetProtocols,
    Subscribe,
    SyncGroupAnswered,
    Tick,
    Unsubscribe,
)
from kgroup.member.config import MemberConfig


SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

_COORDINATOR_GONE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
_RESET = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})


class ClassicState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    FATAL = "fatal"
    LEFT = "left"


S = ClassicState
_TRANSITIONS: dict[ClassicState, frozenset[ClassicState]] = {
    S.UNJOINED: frozenset({S.JOINING, S.FATAL, S.LEFT}),
    S.JOINING: frozenset({S.SYNCING, S.UNJOINED, S.FATAL, S.LEFT}),
    S.SYNCING: frozenset({S.STABLE, S.JOINING, S.UNJOINED, S.FATAL, S.LEFT}),
    S.STABLE: frozenset({S.JOINING, S.UNJOINED, S.FATAL, S.LEFT}),
    S.FATAL: frozenset({S.LEFT}),
    S.LEFT: frozenset(),
}


class IllegalMemberTransition(RuntimeError):
    """A move the transition table does not allow; the state is left unchanged."""


class ClassicMemberMachine:
    """One member of a classic group; see the module comment."""

    def __init__(self, config: MemberConfig, now_ms: int = 0) -> None:
        self.config = config
        self.state = ClassicState.UNJOINED
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol: str | None = None
        self.leader = ""
        self.subscription: tuple[str, ...] = ()
        self.owned: Partitions = frozenset()
        self.metadata: dict[str, int] = {}
        # A group of another protocol type: the protocols offered, the assignment held.
        self.opaque = config.protocol_type != PROTOCOL_TYPE
        self.offered: tuple[tuple[str, bytes], ...] = ()
        self.assignment: bytes | None = None
        self.previous: tuple[bytes, int] | None = None  # the last assignment, its generation
        self.coordinator_known = False
        self.cooperative = config.rebalance_protocol == COOPERATIVE
        self.fatal_error: ErrorCode | None = None
        self._ids = 0
        self._now = now_ms
        self._waiting: tuple[str, int] | None = None    # ("join"|"sync"|"assign", request id)
        self._sent_at = now_ms                          # when the join/sync waited for was sent
        self._heartbeat: tuple[int, int] | None = None  # (request id, sent at)
        self._alive_at: int | None = None               # see "Losing before ..." above
        self._finding = False
        self._retry_at: int | None = None
        self._next_heartbeat = 0
        self._last_poll = now_ms
        self._poll_expired = False
        self._rejoin_after_sync: str | None = None
        self._group_topics: frozenset[str] = frozenset()
        self._assigned_counts: dict[str, int] = {}
        self._reason = ""

    # -- queries --------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        """Whether offsets may be committed with this member's generation."""
        return self.state is ClassicState.STABLE

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader == self.member_id

    @property
    def holds(self) -> bool:
        """Whether the member holds anything (partitions, or an opaque assignment)."""
        return self.assignment is not None if self.opaque else bool(self.owned)

    @property
    def _wants_group(self) -> bool:
        return bool(self.offered) if self.opaque else bool(self.subscription)

    def next_deadline(self) -> int | None:
        """The earliest ``now_ms`` at which a ``Tick`` has something to do (None: never)."""
        times: list[int] = []
        if self.state in (S.LEFT, S.FATAL):
            return None
        if self._polls and not self._poll_expired:
            times.append(self._last_poll + self.config.max_poll_interval_ms)
        if self.state is S.STABLE and self.coordinator_known:
            if self._heartbeat is None:
                times.append(self._next_heartbeat)
            else:
                times.append(self._heartbeat[1] + self.config.session_timeout_ms)
        if self._retry_at is not None:
            times.append(self._retry_at)
        loss = self._loss_deadline()
        if loss is not None:
            times.append(loss)
        return min(times) if times else None

    @property
    def _polls(self) -> bool:
        """A subscribed consumer must poll within max.poll.interval.ms; others never poll."""
        return not self.opaque and bool(self.subscription)

    def _loss_deadline(self) -> int | None:
        if not self.config.lose_before_expiry or not self.holds or self._alive_at is None:
            return None
        if self._waiting is not None and self._waiting[0] in ("join", "sync"):
            return None  # the coordinator keeps a member whose join or sync it holds
        limit = min(self.config.session_timeout_ms, self.config.max_poll_interval_ms)
        return self._alive_at + limit - min(self.config.heartbeat_interval_ms, limit // 2)

    # -- transitions ----------------------------------------------------------------------

    def _to(self, new: ClassicState) -> None:
        if new is self.state:
            return
        if new not in _TRANSITIONS[self.state]:
            raise IllegalMemberTransition(
                f"classic member cannot go {self.state.name} -> {new.name}")
        self.state = new

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    # -- dispatch -------------------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """Apply one event; return the actions to perform, in order."""
        if self.state is S.LEFT:
            return []
        self._now = event.now_ms
        out: list[Action] = []
        handler = getattr(self, "_on_" + type(event).__name__)
        handler(event, out)
        if self.state not in (S.LEFT, S.FATAL):
            self._timers(event.now_ms, out)
        return out

    # -- user calls -----------------------------------------------------------------------

    def _on_Subscribe(self, ev: Subscribe, out: list[Action]) -> None:
        topics = tuple(sorted(set(ev.topics)))
        if self.state is S.FATAL or self.opaque or topics == self.subscription:
            return
        self.subscription = topics
        if not topics:
            self._on_Unsubscribe(Unsubscribe(ev.now_ms), out)
            return
        if self.cooperative:
            gone = frozenset(tp for tp in self.owned if tp[0] not in topics)
            self._revoke(gone, out)
        self._last_poll = ev.now_ms
        self._poll_expired = False
        self._rejoin("subscription changed", ev.now_ms, out)

    def _on_SetProtocols(self, ev: SetProtocols, out: list[Action]) -> None:
        if self.state is S.FATAL or not self.opaque:
            return
        if not ev.protocols:
            self._on_Unsubscribe(Unsubscribe(ev.now_ms), out)
            return
        self.offered = tuple((str(name), bytes(meta)) for name, meta in ev.protocols)
        if self.state is S.UNJOINED:
            self._rejoin("joining the group", ev.now_ms, out)

    def _on_Rejoin(self, ev: Rejoin, out: list[Action]) -> None:
        if self.state in (S.JOINING, S.SYNCING):
            # The round under way started before this: run one more once it completes.
            self._rejoin_after_sync = ev.reason
        elif self.state in (S.STABLE, S.UNJOINED):
            self._rejoin(ev.reason, ev.now_ms, out)

    def _on_Unsubscribe(self, ev: Unsubscribe, out: list[Action]) -> None:
        if self.state is S.FATAL:
            return
        self._revoke_all(out)
        self._leave("the member left the group" if self.opaque else "the consumer unsubscribed",
                    out)
        self.subscription = ()
        self.offered = ()
        if self.state is not S.UNJOINED:
            self._to(S.UNJOINED)

    def _on_Poll(self, ev: Poll, out: list[Action]) -> None:
        self._last_poll = ev.now_ms
        if self._poll_expired and self.state is S.UNJOINED:
            self._poll_expired = False
            if self.subscription:
                self._rejoin("the consumer polled again after a poll timeout", ev.now_ms, out)

    def _on_Close(self, ev: Close, out: list[Action]) -> None:
        if self.state is not S.FATAL:
            self._revoke_all(out)
            self._leave(f"the {'member' if self.opaque else 'consumer'} is being closed", out)
        else:
            self._lose(out)
        self._waiting = None
        self._heartbeat = None
        self._to(S.LEFT)

    # -- coordinator ----------------------------------------------------------------------

    def _on_CoordinatorFound(self, ev: CoordinatorFound, out: list[Action]) -> None:
        self.coordinator_known = True
        self._finding = False
        if self.state is S.STABLE and self._heartbeat is None:
            self._next_heartbeat = min(self._next_heartbeat, ev.now_ms)

    def _on_CoordinatorLost(self, ev: CoordinatorLost, out: list[Action]) -> None:
        self._coordinator_gone(out)

    def _coordinator_gone(self, out: list[Action]) -> None:
        self.coordinator_known = False
        self._heartbeat = None
        if self._waiting is not None:
            kind = self._waiting[0]
            self._waiting = None
            if kind in ("sync", "assign") and self.state is S.SYNCING:
                self._to(S.JOINING)  # the join round is lost with the coordinator
        if not self._finding and self._wants_group:
            self._finding = True
            out.append(FindCoordinator())

    def _on_MetadataUpdated(self, ev: MetadataUpdated, out: list[Action]) -> None:
        self.metadata.update(dict(ev.partitions))
        if self.state is not S.STABLE or not self.is_leader:
            return
        for topic in sorted(self._group_topics):
            if self.metadata.get(topic) != self._assigned_counts.get(topic):
                self._rejoin(f"partitions of {topic} changed", ev.now_ms, out)
                return

    # -- responses ------------------------------------------------------------------------

    def _answered(self, waiting: tuple[str, int], state: ClassicState) -> bool:
        """Whether an answer is to the request in flight (``waiting``: its kind and id) in
        the state it was sent in; if so, nothing is in flight any more. Any other answer is
        stale and ignored."""
        if self._waiting != waiting or self.state is not state:
            return False
        self._waiting = None
        return True

    def _on_JoinGroupAnswered(self, ev: JoinGroupAnswered, out: list[Action]) -> None:
        if not self._answered(("join", ev.request_id), S.JOINING):
            return
        err = ev.error
        if err is ErrorCode.NONE:
            self.member_id = ev.member_id
            self.generation = ev.generation
            self.protocol = ev.protocol
            self.leader = ev.leader
            self._alive_at = self._sent_at
            assignments: tuple[tuple[str, bytes], ...] = ()
            if self.is_leader and not ev.skip_assignment:
                if self.opaque:
                    # The driver runs the assign callback and answers AssignmentsComputed.
                    self._to(S.SYNCING)
                    rid = self._next_id()
                    self._waiting = ("assign", rid)
                    out.append(RunAssign(rid, self.generation, self.protocol, ev.members))
                    return
                try:
                    assignments = self._assign(ev.members)
                except Exception as exc:  # the assignor may be the user's own code
                    self._fatal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"cannot assign: {exc}",
                                out)
                    return
            self._to(S.SYNCING)
            self._send_sync(assignments, out)
        elif err is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = ev.member_id
            self._send_join(out)
        elif err in _RESET:
            self._reset(err, out)
            self._send_join(out)
        elif err is ErrorCode.REBALANCE_IN_PROGRESS:
            self._send_join(out)
        elif err in _COORDINATOR_GONE:
            self._coordinator_gone(out)
        elif err == _LOADING:
            self._retry_at = ev.now_ms + self.config.retry_backoff_ms
        else:
            self._fatal(err, "JoinGroup failed", out)

    def _on_AssignmentsComputed(self, ev: AssignmentsComputed, out: list[Action]) -> None:
        if not self._answered(("assign", ev.request_id), S.SYNCING):
            return
        if ev.error is not None:
            # Leave, so the coordinator need not wait out our session to try another leader.
            self._leave("the assign callback failed", out)
            self._fatal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"assign failed: {ev.error}", out)
            return
        self._send_sync(tuple((str(m), bytes(b)) for m, b in ev.assignments), out)

    def _on_SyncGroupAnswered(self, ev: SyncGroupAnswered, out: list[Action]) -> None:
        if not self._answered(("sync", ev.request_id), S.SYNCING):
            return
        err = ev.error
        if err is ErrorCode.NONE:
            self._alive_at = self._sent_at
            if self.opaque:
                self._install_opaque(bytes(ev.assignment), ev.now_ms, out)
                return
            try:
                assignment = decode_assignment(ev.assignment)
            except ConsumerProtocolError as exc:
                self._fatal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"bad assignment: {exc}", out)
                return
            subscribed = set(self.subscription)
            new = frozenset((t, p) for t, ps in assignment.partitions if t in subscribed
                            for p in ps)
            if self.protocol and hasattr(self.config.client_assignor(self.protocol),
                                         "on_assignment"):
                out.append(RunOnAssignment(self.protocol, assignment, self.generation))
            self._install(new, ev.now_ms, out)
        elif err in _RESET:
            self._reset(err, out)
            self._to(S.JOINING)
            self._send_join(out)
        elif err is ErrorCode.REBALANCE_IN_PROGRESS:
            self._to(S.JOINING)
            self._send_join(out)
        elif err in _COORDINATOR_GONE or err == _LOADING:
            self._to(S.JOINING)
            if err == _LOADING:
                self._retry_at = ev.now_ms + self.config.retry_backoff_ms
            else:
                self._coordinator_gone(out)
        elif err is ErrorCode.FENCED_INSTANCE_ID:
            self._fatal(err, "SyncGroup: another member uses this group.instance.id", out)
        else:
            # Kafka's consumer asks to rejoin and raises the error from this poll only: the
            # member keeps its id and generation and joins again (an INVALID_REQUEST from a
            # broker that answered a late follower's SyncGroup is not the end of the member).
            self._to(S.JOINING)
            self._send_join(out)
            out.append(Failed(err, f"SyncGroup failed: {err.name}"))

    def _on_HeartbeatAnswered(self, ev: HeartbeatAnswered, out: list[Action]) -> None:
        if self._heartbeat is None or self._heartbeat[0] != ev.request_id:
            return
        sent = self._heartbeat[1]
        self._heartbeat = None
        self._next_heartbeat = ev.now_ms + self.config.heartbeat_interval_ms
        if self.state is not S.STABLE:
            return
        if ev.error is ErrorCode.NONE:
            self._alive_at = max(self._alive_at or sent, sent)
        self._group_error(ev.error, "heartbeat", ev.now_ms, out)

    def _on_CommitAnswered(self, ev: CommitAnswered, out: list[Action]) -> None:
        if self.state is S.STABLE:
            self._group_error(ev.error, "offset commit", ev.now_ms, out)

    def _group_error(self, err: ErrorCode, what: str, now_ms: int, out: list[Action]) -> None:
        if err is ErrorCode.NONE:
            return
        if err is ErrorCode.REBALANCE_IN_PROGRESS:
            self._rejoin(f"{what}: the group is rebalancing", now_ms, out)
        elif err in _RESET:
            self._reset(err, out)
            self._rejoin(f"{what}: {err.name}", now_ms, out)
        elif err in _COORDINATOR_GONE:
            self._coordinator_gone(out)
        elif err is ErrorCode.FENCED_INSTANCE_ID:
            self._fatal(err, f"{what}: another member uses this group.instance.id", out)
        elif err == _LOADING:
            pass  # the next heartbeat retries
        else:
            self._fatal(err, f"{what} failed", out)

    def _on_RequestFailed(self, ev: RequestFailed, out: list[Action]) -> None:
        mine = (self._waiting is not None and self._waiting[1] == ev.request_id) or (
            self._heartbeat is not None and self._heartbeat[0] == ev.request_id)
        if mine:
            self._coordinator_gone(out)

    def _on_Tick(self, ev: Tick, out: list[Action]) -> None:
        return  # timers run after every event

    # -- timers ---------------------------------------------------------------------------

    def _timers(self, now: int, out: list[Action]) -> None:
        # 1. max.poll.interval.ms without a poll: leave; the partitions are lost.
        if (self._polls and not self._poll_expired
                and now >= self._last_poll + self.config.max_poll_interval_ms):
            self._poll_expired = True
            self._lose(out)
            self._leave("consumer poll timeout has expired", out)
            self.member_id = "" if not self.config.is_static else self.member_id
            self.generation = NO_GENERATION
            self._waiting = None
            self._heartbeat = None
            self._retry_at = None
            if self.state is not S.UNJOINED:
                self._to(S.UNJOINED)
            return
        # 2. Holding something while the coordinator went unheard for too long: it may
        #    give it to another member any moment, so let it go first and rejoin.
        loss = self._loss_deadline()
        if loss is not None and now >= loss:
            self._lose(out)
            self.generation = NO_GENERATION
            self._rejoin("no answer from the coordinator within the session timeout", now, out)
        # 3. A join waiting out COORDINATOR_LOAD_IN_PROGRESS.
        if self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            if self.state is S.JOINING and self._waiting is None:
                self._send_join(out)
        # 4. Heartbeats in STABLE; no answer within the session timeout: coordinator gone.
        if self.state is S.STABLE and self.coordinator_known:
            if self._heartbeat is None and now >= self._next_heartbeat:
                rid = self._next_id()
                self._heartbeat = (rid, now)
                out.append(SendHeartbeat(rid, self.config.group_id, self.generation,
                                         self.member_id, self.config.group_instance_id))
            elif (self._heartbeat is not None
                  and now >= self._heartbeat[1] + self.config.session_timeout_ms):
                self._coordinator_gone(out)
        # 5. A join to (re)send once the coordinator is known.
        if (self.state is S.JOINING and self._waiting is None and self._retry_at is None
                and self.coordinator_known):
            self._send_join(out)

    # -- steps ----------------------------------------------------------------------------

    def _rejoin(self, reason: str, now_ms: int, out: list[Action]) -> None:
        """Start a join round: eager revokes everything first, cooperative keeps it."""
        if self.state in (S.FATAL, S.LEFT) or not self._wants_group:
            return
        if not self.cooperative:
            self._revoke_all(out)
        self._reason = reason
        self._rejoin_after_sync = None
        self._waiting = None
        self._heartbeat = None
        self._to(S.JOINING)
        if self.coordinator_known:
            self._send_join(out)
        elif not self._finding:
            self._finding = True
            out.append(FindCoordinator())

    def _send_join(self, out: list[Action]) -> None:
        if not self.coordinator_known:
            if not self._finding:
                self._finding = True
                out.append(FindCoordinator())
            return
        rid = self._next_id()
        self._waiting = ("join", rid)
        self._sent_at = self._now
        self._retry_at = None
        out.append(SendJoinGroup(
            rid, self.config.group_id, self.member_id, self.config.group_instance_id,
            self.config.session_timeout_ms, self.config.max_poll_interval_ms,
            self._protocols(), self._reason, self.config.protocol_type))

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...], out: list[Action]) -> None:
        rid = self._next_id()
        self._waiting = ("sync", rid)
        self._sent_at = self._now
        out.append(SendSyncGroup(rid, self.config.group_id, self.generation, self.member_id,
                                 self.config.group_instance_id, self.protocol, assignments,
                                 self.config.protocol_type))

    def _protocols(self) -> tuple[tuple[str, bytes], ...]:
        if self.opaque:
            if self.config.metadata_for is None:
                return self.offered
            last, generation = self.previous or (None, NO_GENERATION)
            return tuple(self.config.metadata_for(self.assignment, last, generation))
        owned = _topic_partitions(self.owned)
        out = []
        for entry in self.config.assignors:
            name = entry if isinstance(entry, str) else entry.name
            user_data: bytes | None = None
            if name == "sticky":
                gen = self.generation if self.generation >= 0 else None
                user_data = encode_sticky_user_data(owned, gen)
            elif name == "cooperative-sticky":
                user_data = struct.pack(">i", self.generation)
            else:
                hook = getattr(self.config.client_assignor(name), "subscription_user_data", None)
                if hook is not None:
                    user_data = hook(self.subscription)
            sub = Subscription(self.subscription, user_data, owned, self.generation)
            out.append((name, encode_subscription(sub, SUBSCRIPTION_VERSION)))
        return tuple(out)

    def _assign(self, members: tuple[JoinedMember, ...]) -> tuple[tuple[str, bytes], ...]:
        """The leader's assignment for every member, by the chosen assignor."""
        assignor = self.config.client_assignor(self.protocol or "")
        clients = {}
        topics: set[str] = set()
        for m in members:
            sub = decode_subscription(m.metadata)
            clients[m.member_id] = ClientMember(m.member_id, m.group_instance_id, sub)
            topics.update(sub.topics)
        counts = {t: self.metadata[t] for t in sorted(topics) if self.metadata.get(t, 0) > 0}
        self._group_topics = frozenset(topics)
        self._assigned_counts = dict(counts)
        result = assignor.assign(clients, counts)
        return tuple(
            (mid, encode_assignment(result.get(mid, Assignment()), ASSIGNMENT_VERSION))
            for mid in sorted(clients)
        )

    def _install(self, new: Partitions, now_ms: int, out: list[Action]) -> None:
        """A SyncGroup assignment arrived: revoke what moved away, assign what is new."""
        revoked = self.owned - new
        added = new - self.owned
        self._revoke(revoked, out)
        self.owned = self.owned | added
        out.append(RunAssigned(added))
        self._stable(now_ms)
        if self.cooperative and revoked:
            self._rejoin("partitions were revoked: second round", now_ms, out)
        elif self._rejoin_after_sync is not None:
            self._rejoin(self._rejoin_after_sync, now_ms, out)

    def _install_opaque(self, assignment: bytes, now_ms: int, out: list[Action]) -> None:
        """A SyncGroup assignment of another protocol type arrived: hand it over whole."""
        self.assignment = assignment
        self.previous = (assignment, self.generation)
        out.append(RunOpaqueAssigned(assignment, self.generation, self.leader, self.member_id))
        self._stable(now_ms)
        if self._rejoin_after_sync is not None:
            self._rejoin(self._rejoin_after_sync, now_ms, out)

    def _stable(self, now_ms: int) -> None:
        self._to(S.STABLE)
        self._next_heartbeat = now_ms + self.config.heartbeat_interval_ms

    def _revoke_all(self, out: list[Action]) -> None:
        if self.opaque:
            if self.assignment is not None:
                self.assignment = None
                out.append(RunOpaqueRevoked(self.generation))
        else:
            self._revoke(self.owned, out)

    def _revoke(self, partitions: Partitions, out: list[Action]) -> None:
        if not partitions:
            return
        if self.config.auto_commit and self.generation >= 0:
            out.append(CommitOffsets(partitions, self.generation, self.member_id))
        self.owned = self.owned - partitions
        out.append(RunRevoked(partitions, self.generation, self.member_id))

    def _lose(self, out: list[Action]) -> None:
        if self.opaque:
            if self.assignment is not None:
                self.assignment = None
                out.append(RunOpaqueLost(self.generation))
        elif self.owned:
            lost, self.owned = self.owned, frozenset()
            out.append(RunLost(lost))

    def _reset(self, err: ErrorCode, out: list[Action]) -> None:
        """Our generation is gone: what we own is lost; UNKNOWN_MEMBER_ID drops our id."""
        self._lose(out)
        self.generation = NO_GENERATION
        if err is ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""

    def _leave(self, reason: str, out: list[Action]) -> None:
        """LeaveGroup for a dynamic member that has an id; static members never send it."""
        if (not self.config.is_static and self.member_id
                and self.state in (S.JOINING, S.SYNCING, S.STABLE) and self.coordinator_known):
            out.append(SendLeaveGroup(self.config.group_id, self.member_id, None, reason))
        self._waiting = None
        self._heartbeat = None
        if not self.config.is_static:
            self.member_id = ""
        self.generation = NO_GENERATION

    def _fatal(self, err: ErrorCode, message: str, out: list[Action]) -> None:
        self._lose(out)
        self._waiting = None
        self._heartbeat = None
        self.fatal_error = err
        self._to(S.FATAL)
        out.append(Fatal(err, message))


def _topic_partitions(parts: Partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return tuple((t, tuple(sorted(by_topic[t]))) for t in sorted(by_topic))
