"""The lab's event loop: a heap of what happens next, in virtual time.

How this works: every entry is (time, sequence, kind, payload); entries due at one time
run in the order they were pushed (the sequence breaks the tie), so a run is a function of
its scenario alone. `run` pops them in that order and hands each payload to the handler
its `EngineEvent` has in one table. Two counts say whether anything is pending that is not
a plain timer, which a fast-forward must not skip: requests and replies on a link
(`in_flight`) and member work waiting to happen (`special`: a local event, rebalance work
waiting for the end of a poll batch, a coordinator lookup, a metadata refresh).
"""

from __future__ import annotations

import heapq
from enum import IntEnum
from typing import Any, Callable, Mapping


class EngineEvent(IntEnum):
    """What a heap entry is. (An IntEnum: the loop indexes its handler table with it.)"""

    ACTION = 0          # a scenario action starts (payload: the Action)
    END = 1             # a timed scenario action ends (the Action)
    TO_COORD = 2        # a request reaches the coordinator (token, request)
    TO_MEMBER = 3       # a reply reaches its member (index, incarnation, kind, request id, response)
    LOCAL = 4           # a member's own event: a request failed, topic names came (index, inc, event)
    TICK = 5            # a member state machine's timer is due (index, incarnation)
    COORD_TIMER = 6     # the coordinator's next timer deadline (None)
    COMMIT = 7          # a member's auto-commit is due (index, incarnation, commit sequence)
    BUNDLE = 8          # rebalance work waiting for the end of a poll batch (index, incarnation)
    FIND = 9            # a FindCoordinator round trip ends (index, incarnation)
    METADATA = 10       # a metadata refresh shows the member the topics' partitions (index, inc)


assert [k.value for k in EngineEvent] == list(range(len(EngineEvent))), "table indices"
_TO_COORD, _LOCAL, _BUNDLE = EngineEvent.TO_COORD, EngineEvent.LOCAL, EngineEvent.BUNDLE

Handler = Callable[[Any, int], None]


class EventLoop:
    """The heap, the virtual clock (`now`) and the counts of pending work."""

    __slots__ = ("now", "quiet_check", "in_flight", "special", "_heap", "_seq")

    def __init__(self) -> None:
        self.now = 0
        self.quiet_check = 0        # fast-forward looks for a quiet stretch from this time on
        self.in_flight = 0
        self.special = 0
        self._heap: list[tuple[int, int, EngineEvent, Any]] = []
        self._seq = 0

    def push(self, t: int, kind: EngineEvent, payload: Any) -> None:
        """`kind` happens at `t` (after whatever was pushed for `t` before)."""
        self._seq += 1
        if kind <= _LOCAL and kind >= _TO_COORD:
            if kind == _LOCAL:
                self.special += 1
            else:
                self.in_flight += 1
        elif kind >= _BUNDLE:
            self.special += 1
        heapq.heappush(self._heap, (t, self._seq, kind, payload))

    @staticmethod
    def table(handlers: Mapping[EngineEvent, Handler]) -> tuple[Handler, ...]:
        """The handler table `run` takes: one handler for every kind, indexed by kind."""
        missing = [k.name for k in EngineEvent if k not in handlers]
        if missing:
            raise ValueError(f"no handler for {', '.join(missing)}")
        return tuple(handlers[k] for k in EngineEvent)

    def run(self, until: int, table: tuple[Handler, ...], tick: Callable[[int], None],
            look_for_quiet: Callable[[int], None] | None, after: Callable[[], None]) -> None:
        """Run every entry due up to `until`, in order: `tick(t)` when time moves,
        `look_for_quiet(t)` (a fast-forward) before an entry due at `quiet_check` or later,
        `after()` once each entry's handler ran."""
        heap = self._heap
        pop = heapq.heappop
        while heap:
            t = heap[0][0]
            if t > until:
                break
            if look_for_quiet is not None and t >= self.quiet_check:
                look_for_quiet(t)
            t, _, kind, payload = pop(heap)
            if t > self.now:
                self.now = t
                tick(t)
            if _TO_COORD <= kind <= _LOCAL:
                if kind == _LOCAL:
                    self.special -= 1
                else:
                    self.in_flight -= 1
            elif kind >= _BUNDLE:
                self.special -= 1
            table[kind](payload, t)
            after()
