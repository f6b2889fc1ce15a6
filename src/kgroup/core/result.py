"""What a handler or an expired timer gives back: records to persist, replies to send, the
groups it changed with why, the group events of those changes, and transaction markers for
the broker to write.

How this works: a handler collects its output in a `ResultBuilder` while it runs: records,
replies, group changes, and *staged* changes of runtime state (`then`: a timer armed or
cancelled, a classic group taken out or put in). Staged changes run when the handler calls
`build()`, which it does last, so a handler that raises has changed nothing: the request
either happens whole or not at all. Stored state changes only when the caller replays the
records.

A handler that changes groups builds with an event journal (core/event_journal.py): it
names each group before it changes it (`changed`), says as it goes what it does to a classic
group's members (`member_joined`, `member_gone`, `member_assigned`), and `build()` puts the
typed group events of the whole change in the Result (`events`, core/group_events.py).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable, Hashable, NamedTuple

from kgroup.core.records import Record

# A reply token is opaque to the core: the broker passes something that identifies a waiting
# request (its connection and correlation id), a test passes its own handle. The core only
# stores it and hands it back with the response.
ReplyTo = Hashable


class Departure(Enum):
    """How a member that a change removed is reported (the group events' kinds)."""

    LEFT = "member_left"
    EXPIRED = "member_expired"
    FENCED = "member_fenced"


class GroupChange(NamedTuple):
    """A handler's word that it may have changed a group: what ran (a request or a timer,
    as the group events name it) and how a member it removed is reported. (A NamedTuple, as
    Result: one is made for every change.)"""

    group_id: str
    what: str
    departure: Departure = Departure.LEFT
    # Offsets a committed transaction made visible in this group (KIP-447): the group
    # events report them; None for every other change.
    committed: tuple[tuple[str, int], ...] | None = None


class Result(NamedTuple):
    """Records to append (then replay), replies to deliver once they are durable, the groups
    the handler may have changed, and the group events of those changes.

    A NamedTuple rather than a frozen dataclass: every request builds one, and a frozen
    dataclass's __init__ (an object.__setattr__ per field) costs about twice as much.
    """

    records: tuple[Record, ...] = ()
    replies: tuple[tuple[ReplyTo, Any], ...] = ()
    changes: tuple[GroupChange, ...] = ()
    # Transaction markers (core/transactions/messages.py, TxnMarkers) the broker writes once
    # the records before them are durable.
    markers: tuple[Any, ...] = ()
    # The group events of the changes (core/group_events.py, GroupEvent), in order.
    events: tuple[Any, ...] = ()

    def __add__(self, other: "Result") -> "Result":  # type: ignore[override]
        if not other.records and not other.replies and not other.changes and not other.markers:
            return self
        if not self.records and not self.replies and not self.changes and not self.markers:
            return other
        return Result(self.records + other.records, self.replies + other.replies, self.changes + other.changes,
                      self.markers + other.markers, self.events + other.events)


EMPTY_RESULT = Result()

# `ResultBuilder.changed` without the group object: the journal looks it up.
UNKNOWN: Any = object()


class ResultBuilder:
    """Collects records, replies and changes while one handler runs, in the order they happen.

    `journal`: the event journal of a handler that changes groups (core/event_journal.py,
    EventJournal); without one, `changed` only names the group."""

    __slots__ = ("records", "replies", "changes", "effects", "markers", "journal")

    def __init__(self, journal: Any = None) -> None:
        self.records: list[Record] = []
        self.replies: list[tuple[ReplyTo, Any]] = []
        self.changes: list[GroupChange] = []
        self.effects: list[tuple[Callable[..., Any], tuple]] = []
        self.markers: list[Any] = []
        self.journal = journal

    def record(self, record: Record) -> None:
        self.records.append(record)

    def reply(self, to: ReplyTo | None, response: Any) -> None:
        if to is not None:
            self.replies.append((to, response))

    def changed(self, group_id: str, what: str, departure: Departure = Departure.LEFT,
                committed: tuple[tuple[str, int], ...] | None = None, group: Any = UNKNOWN) -> None:
        """This handler may change `group_id` (see GroupChange); said before it changes it.
        `group`: the group object the handler holds (None: none yet), if it has it at hand."""
        self.changes.append(GroupChange(group_id, what, departure, committed))
        if self.journal is not None:
            self.journal.named(group_id, what, departure, committed, group)

    # ---- what a handler does to a classic group's members (the journal's facts) -------------

    def member_joined(self, group: Any, member: Any, replaced: Any = None) -> None:
        if self.journal is not None:
            self.journal.joined(group, member, replaced)

    def member_gone(self, group: Any, member: Any) -> None:
        if self.journal is not None:
            self.journal.gone(group, member)

    def member_assigned(self, group: Any, member: Any, assignment: bytes) -> None:
        """A classic group going Stable gives `member` other bytes than it last reported."""
        if self.journal is not None:
            self.journal.assigned(group, member, assignment)

    def marker(self, markers: Any) -> None:
        """Ask the broker to write a transaction's markers (after the records so far)."""
        self.markers.append(markers)

    def then(self, effect: Callable[..., Any], *args: Any) -> None:
        """Stage a change of runtime state, `effect(*args)`, to run at `build()`."""
        self.effects.append((effect, args))

    def build(self) -> Result:
        """Run the staged changes, in order, then hand out the Result (a handler's last step)."""
        effects = self.effects
        while effects:                       # an effect may stage or record more
            self.effects = []
            for effect, args in effects:
                effect(*args)
            effects = self.effects
        if not self.records and not self.replies and not self.changes and not self.markers:
            return EMPTY_RESULT
        events = self.journal.finish(self.records) if self.journal is not None and self.changes else ()
        return Result(tuple(self.records), tuple(self.replies), tuple(self.changes), tuple(self.markers), events)
