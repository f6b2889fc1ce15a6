"""Two coordinators side by side, one with a kind's steady-heartbeat path (`steady`) and one
without, fed the same operations: after each, both must have written the same records,
given the same answers and errors, and hold the same groups, stored state and timers.
Used by test_consumer_steady_heartbeat.py and test_share_steady_heartbeat.py."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable
from unittest.mock import patch

from tests.unit.core.groupctx import GroupContext, Pending


class Recording(GroupContext):
    """A GroupContext that keeps every request's reply slot, in order."""

    def __post_init__(self) -> None:
        self.pendings: list[Pending] = []
        super().__post_init__()

    def call(self, method, request, *args) -> Pending:
        pending = super().call(method, request, *args)
        self.pendings.append(pending)
        return pending


def _no_steady_path(self, group, req, reply, now_ms):
    return None


class Twins:
    """`fast` and `slow` are runs (anything with a `ctx`, a Recording) that `step(run, op)`
    drives; `protocol` is the kind's protocol class, `groups` the coordinator's attribute
    holding that kind's groups."""

    def __init__(self, protocol: type, groups: str, fast: Any, slow: Any,
                 step: Callable[[Any, tuple], None]) -> None:
        self.protocol, self.groups, self.fast, self.slow, self.step = protocol, groups, fast, slow, step
        self.original = protocol.steady
        self.answered: Counter = Counter()      # what the steady path did, by outcome

    def play(self, ops) -> "Twins":
        """`apply` each of `ops` in turn."""
        for op in ops:
            self.apply(op)
        return self

    def apply(self, op: tuple) -> None:
        original, answered = self.original, self.answered

        def counted(protocol, group, req, reply, now_ms):
            result = original(protocol, group, req, reply, now_ms)
            answered["answered" if result is not None else "stepped"] += 1
            return result

        with patch.object(self.protocol, "steady", counted):
            self.step(self.fast, op)
        with patch.object(self.protocol, "steady", _no_steady_path):
            self.step(self.slow, op)
        self.same(op)

    def same(self, op: tuple) -> None:
        fast, slow = self.fast.ctx, self.slow.ctx
        assert fast.log == slow.log, op
        answers = [[(p.response, p.raised, p.message, p.replies) for p in c.pendings] for c in (fast, slow)]
        assert answers[0] == answers[1], op
        assert getattr(fast.coord, self.groups) == getattr(slow.coord, self.groups), op
        assert fast.coord.stored == slow.coord.stored, op
        assert fast.coord.shard.topics == slow.coord.shard.topics, op
        timers = [(dict(c.coord.shard.timers._current), c.coord.shard.timers._seq) for c in (fast, slow)]
        assert timers[0] == timers[1], op
