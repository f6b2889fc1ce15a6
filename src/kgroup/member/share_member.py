"""The share-group member (KIP-932, ShareGroupHeartbeat), and the acknowledgements it owes.

How this works: ``ShareMemberMachine.handle(event)`` takes one event (subscribe, a heartbeat
answer or failure, the passing of time, close), each carrying ``now_ms`` like the other
members' events (it shares ``Subscribe``, ``Tick`` and ``Close`` with them), and returns the
actions its driver must perform: send this heartbeat, or give up (``Fatal``);
``next_deadline()`` says when to call it with a ``Tick``. The coordinator
computes the assignment and, unlike a consumer group, never asks for anything back: a share
member simply fetches from what it was last given. Nothing here reads a clock or does I/O.

States (one transition table, ``TRANSITIONS``; an illegal move raises and changes nothing):

    UNSUBSCRIBED --subscribe--> JOINING (heartbeat with epoch 0 and the topics)
    JOINING      --answer--> STABLE (member epoch and assignment from the answer)
    STABLE       --answer--> STABLE (a new assignment when the answer carries one)
    JOINING, STABLE --FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID--> JOINING (epoch 0 again, no
                 assignment meanwhile)
    JOINING, STABLE --close--> LEAVING (heartbeat with epoch -1) --answered or failed-->
                 UNSUBSCRIBED
    any but UNSUBSCRIBED --INVALID_REQUEST, GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED,
                 GROUP_AUTHORIZATION_FAILED, ...--> FATAL

One heartbeat is in flight at a time, every ``heartbeat_interval_ms`` the coordinator gave;
a failed one (a coordinator that moved, a lost connection) is retried after
``retry_backoff_ms``. ``ShareAcks`` keeps what the application decided about delivered
records until a request carries it: runs of offsets with one type each, per partition.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kgroup.error_codes import ErrorCode
from kgroup.member.actions import Fatal
from kgroup.member.classic_events import Close, Subscribe, Tick

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
# topic id -> sorted partitions
Assignment = tuple[tuple[str, tuple[int, ...]], ...]


class ShareMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"
    FATAL = "fatal"


S = ShareMemberState
TRANSITIONS: dict[ShareMemberState, frozenset[ShareMemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.JOINING}),
    S.JOINING: frozenset({S.JOINING, S.STABLE, S.LEAVING, S.FATAL}),
    S.STABLE: frozenset({S.STABLE, S.JOINING, S.LEAVING, S.FATAL}),
    S.LEAVING: frozenset({S.UNSUBSCRIBED, S.FATAL}),
    S.FATAL: frozenset(),
}
_REJOIN = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_RETRY = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR})


class IllegalShareMemberTransition(RuntimeError):
    """A bug: a move the member's transition table forbids."""


# ---- events and actions (Subscribe, Tick and Close are the members' common events) ------------

@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatAnswered:
    """The answer to a ``SendShareGroupHeartbeat``; ``assignment`` None means unchanged."""

    error: ErrorCode
    now_ms: int
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatFailed:
    """The heartbeat got no answer (connection lost, timed out)."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class SendShareGroupHeartbeat:
    member_epoch: int
    subscribed_topic_names: tuple[str, ...] | None   # None: unchanged


Event = Subscribe | Tick | Close | ShareGroupHeartbeatAnswered | ShareGroupHeartbeatFailed
Action = SendShareGroupHeartbeat | Fatal


class ShareMemberMachine:
    """One share-group member's side of ShareGroupHeartbeat."""

    def __init__(self, member_id: str, retry_backoff_ms: int = 100) -> None:
        self.member_id = member_id
        self.retry_backoff_ms = retry_backoff_ms
        self.state = S.UNSUBSCRIBED
        self.epoch = JOIN_EPOCH
        self.assignment: Assignment = ()
        self.topics: tuple[str, ...] = ()
        self.interval_ms = 5_000
        self._due: int | None = None          # when the next heartbeat is due
        self._in_flight = False
        self._send_topics = True              # the next heartbeat carries the topics

    def _to(self, state: ShareMemberState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalShareMemberTransition(f"{self.state.value} -> {state.value}")
        self.state = state

    def next_deadline(self) -> int | None:
        return None if self._in_flight else self._due

    def handle(self, event: Event) -> list[Action]:
        """Apply one event; the heartbeats (and failures) the driver must act on."""
        now_ms = event.now_ms
        if isinstance(event, Subscribe):
            self.topics = tuple(sorted(set(event.topics)))
            self._send_topics = True
            if self.state is S.UNSUBSCRIBED:
                self._to(S.JOINING)
                self.epoch = JOIN_EPOCH
            self._due = now_ms
        elif isinstance(event, Close):
            if self.state in (S.JOINING, S.STABLE):
                self._to(S.LEAVING)
                self.assignment = ()
                self._due = now_ms
        elif isinstance(event, ShareGroupHeartbeatAnswered):
            self._in_flight = False
            return self._answer(event, now_ms)
        elif isinstance(event, ShareGroupHeartbeatFailed):
            self._in_flight = False
            if self.state is S.LEAVING:
                self._to(S.UNSUBSCRIBED)
                self._due = None
            else:
                self._send_topics = True
                self._due = now_ms + self.retry_backoff_ms
        return self._send(now_ms)

    def _answer(self, answer: ShareGroupHeartbeatAnswered, now_ms: int) -> list[Action]:
        if self.state is S.LEAVING:
            self._to(S.UNSUBSCRIBED)
            self._due = None
            return []
        if answer.error is ErrorCode.NONE:
            self._to(S.STABLE)
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.assignment = answer.assignment
            if answer.heartbeat_interval_ms > 0:
                self.interval_ms = answer.heartbeat_interval_ms
            self._due = now_ms + self.interval_ms
            return []
        if answer.error in _REJOIN:
            self._to(S.JOINING)
            self.epoch = JOIN_EPOCH
            self.assignment = ()
            self._send_topics = True
            self._due = now_ms
            return self._send(now_ms)
        if answer.error in _RETRY:
            self._send_topics = True
            self._due = now_ms + self.retry_backoff_ms
            return []
        self._to(S.FATAL)
        self.assignment = ()
        self._due = None
        return [Fatal(answer.error)]

    def _send(self, now_ms: int) -> list[Action]:
        if self._in_flight or self._due is None or now_ms < self._due:
            return []
        if self.state not in (S.JOINING, S.STABLE, S.LEAVING):
            return []
        self._in_flight = True
        self._due = None
        if self.state is S.LEAVING:
            return [SendShareGroupHeartbeat(LEAVE_EPOCH, None)]
        full = self._send_topics or self.epoch == JOIN_EPOCH
        self._send_topics = False
        return [SendShareGroupHeartbeat(self.epoch, self.topics if full else None)]


# ---- acknowledgements ------------------------------------------------------------------------

TopicPartition = tuple[str, int]
AckRun = tuple[int, int, int]          # (first offset, last offset, acknowledge type)


@dataclass(slots=True)
class ShareAcks:
    """Records delivered to the application and what it decided about them."""

    # (topic, partition) -> offset -> acknowledge type (None: delivered, not decided yet)
    pending: dict[TopicPartition, dict[int, int | None]] = field(default_factory=dict)

    def delivered(self, tp: TopicPartition, offsets: list[int]) -> None:
        slots = self.pending.setdefault(tp, {})
        for o in offsets:
            slots.setdefault(o, None)

    def acknowledge(self, tp: TopicPartition, offset: int, kind: int) -> None:
        slots = self.pending.get(tp)
        if slots is None or offset not in slots:
            raise ValueError(f"{tp[0]}-{tp[1]}@{offset} was not delivered by the last polls")
        slots[offset] = kind

    def undecided(self) -> int:
        return sum(1 for slots in self.pending.values() for kind in slots.values() if kind is None)

    def accept_undecided(self, accept: int) -> None:
        """Implicit mode: every record the application got and did not decide on is ACCEPTed."""
        for slots in self.pending.values():
            for offset, kind in slots.items():
                if kind is None:
                    slots[offset] = accept

    def take(self, tps: set[TopicPartition] | None = None) -> dict[TopicPartition, list[AckRun]]:
        """The decided acknowledgements (of `tps`, or all), as runs; they leave the book."""
        out: dict[TopicPartition, list[AckRun]] = {}
        for tp in list(self.pending):
            if tps is not None and tp not in tps:
                continue
            slots = self.pending[tp]
            decided = sorted((o, k) for o, k in slots.items() if k is not None)
            runs: list[AckRun] = []
            for offset, kind in decided:
                del slots[offset]
                if runs and runs[-1][1] == offset - 1 and runs[-1][2] == kind:
                    runs[-1] = (runs[-1][0], offset, kind)
                else:
                    runs.append((offset, offset, kind))
            if runs:
                out[tp] = runs
            if not slots:
                del self.pending[tp]
        return out

    def forget(self, tp: TopicPartition) -> None:
        """Records of a partition whose share session was lost: their locks are gone too."""
        self.pending.pop(tp, None)
