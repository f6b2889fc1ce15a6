"""What a handler or an expired timer gives back: records to persist and replies to send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

from kgroup.core.records import Record

# A reply token is opaque to the core: the broker passes something that identifies a waiting
# request (its connection and correlation id), a test passes its own handle. The core only
# stores it and hands it back with the response.
ReplyTo = Hashable


@dataclass(frozen=True, slots=True)
class Result:
    """Records to append (then replay) and replies to deliver once they are durable."""

    records: tuple[Record, ...] = ()
    replies: tuple[tuple[ReplyTo, Any], ...] = ()

    def __add__(self, other: "Result") -> "Result":
        if not other.records and not other.replies:
            return self
        if not self.records and not self.replies:
            return other
        return Result(self.records + other.records, self.replies + other.replies)


EMPTY_RESULT = Result()


class ResultBuilder:
    """Collects records and replies while one handler runs, in the order they happen."""

    __slots__ = ("records", "replies")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.replies: list[tuple[ReplyTo, Any]] = []

    def record(self, record: Record) -> None:
        self.records.append(record)

    def reply(self, to: ReplyTo | None, response: Any) -> None:
        if to is not None:
            self.replies.append((to, response))

    def build(self) -> Result:
        if not self.records and not self.replies:
            return EMPTY_RESULT
        return Result(tuple(self.records), tuple(self.replies))
