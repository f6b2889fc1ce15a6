"""The scenario's actions, run at their times: what each does when it starts and ends.

How this works: every ``Action`` of the timeline is an ``EngineEvent.ACTION`` on the loop;
a timed one (a bounce, a pause, a cut...) schedules its ``EngineEvent.END`` when it starts.
Each dispatches through one table keyed by its ``ActionKind`` (one for starting, one for
ending). An action from a scenario event opens a measurement window once the group has
warmed up; the starts or closes of one scale event share a single window (kind ``scale``).
The times of the actions still to come are kept in a heap that fast-forward reads, so it
lands before the next one.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import replace
from typing import Callable

from kgroup.lab.coordinator import LabCoordinator
from kgroup.lab.loop import EngineEvent, EventLoop
from kgroup.lab.member_driver import MemberDriver
from kgroup.lab.metrics import Metrics
from kgroup.lab.scenario import Action, ActionKind, Scenario

_K = ActionKind


class Disruptions:
    """Starts and ends the scenario's actions."""

    def __init__(self, scenario: Scenario, loop: EventLoop, metrics: Metrics, coordinator: LabCoordinator,
                 members: MemberDriver) -> None:
        self.sc = scenario
        self.loop = loop
        self.metrics = metrics
        self.coordinator = coordinator
        self.members = members
        self.rng = random.Random(f"engine:{scenario.seed}")
        self.times: list[int] = []              # a heap: when the actions still to come happen
        self._scaling: set[int] = set()         # scale events whose window is open
        self._start: dict[ActionKind, Callable[[Action], None]] = {
            _K.START: lambda a: members.start(a.member),
            _K.BOUNCE: self._bounce,
            _K.CLOSE: lambda a: members.close(a.member),
            _K.CRASH: self._crash,
            _K.GC_PAUSE: self._gc_pause,
            _K.CUT: self._cut,
            _K.NETWORK: self._network,
            _K.ADD_PARTITIONS: self._add_partitions,
            _K.COORDINATOR_RESTART: self._coordinator_restart,
            _K.COORDINATOR_FAILOVER: self._coordinator_failover,
            _K.COORDINATOR_LOADING: lambda a: coordinator.start_loading(),
            _K.SCALE: _never,
        }
        restore = scenario.network
        self._end: dict[ActionKind, Callable[[Action], None]] = {
            _K.START: _nothing,
            _K.BOUNCE: lambda a: members.start(a.member),
            _K.CLOSE: _nothing,
            _K.CRASH: lambda a: members.start(a.member),
            _K.GC_PAUSE: lambda a: members.wake_from_pause(a.member),
            _K.CUT: lambda a: members.cut(a.member, False),
            _K.NETWORK: lambda a: members.set_link(a.member, restore.delay_ms, restore.jitter_ms),
            _K.ADD_PARTITIONS: _nothing,
            _K.COORDINATOR_RESTART: lambda a: coordinator.come_up(),
            _K.COORDINATOR_FAILOVER: lambda a: coordinator.come_up(),
            _K.COORDINATOR_LOADING: _nothing,
            _K.SCALE: _nothing,
        }
        assert set(self._start) == set(self._end) == set(ActionKind), "one handler per kind"

    # ---- loop events ----------------------------------------------------------------------

    def action(self, a: Action, t: int) -> None:
        """EngineEvent.ACTION: an action starts (and opens its window)."""
        heapq.heappop(self.times)
        if self.metrics.warm and a.event >= 0:
            if self._grouped(a):
                # Scaling is one disruption however many members come or go.
                if a.event not in self._scaling:
                    self._scaling.add(a.event)
                    self._open_window(replace(a, kind=_K.SCALE, member=-1))
                    self._end_at(replace(a, kind=_K.SCALE, member=-1))
            else:
                self._open_window(a)
        self._start[a.kind](a)

    def end(self, a: Action, t: int) -> None:
        """EngineEvent.END: a timed action is over."""
        heapq.heappop(self.times)
        self.metrics.disruption_over(a.event, a.member)
        self._end[a.kind](a)

    def schedule(self, a: Action) -> None:
        self.loop.push(a.at_ms, EngineEvent.ACTION, a)
        heapq.heappush(self.times, a.at_ms)

    def _end_at(self, a: Action) -> None:
        self.loop.push(a.until_ms, EngineEvent.END, a)
        heapq.heappush(self.times, a.until_ms)

    # ---- starting, by kind ----------------------------------------------------------------

    def _bounce(self, a: Action) -> None:
        self.members.close(a.member)
        self._end_at(a)

    def _crash(self, a: Action) -> None:
        self.members.crash(a.member)
        if a.until_ms >= 0:
            self._end_at(a)

    def _gc_pause(self, a: Action) -> None:
        self.members.pause(a.member, a.until_ms)
        self._end_at(a)

    def _cut(self, a: Action) -> None:
        self.members.cut(a.member, True)
        self._end_at(a)

    def _network(self, a: Action) -> None:
        self.members.set_link(a.member, a.delay_ms, a.jitter_ms)
        self._end_at(a)

    def _add_partitions(self, a: Action) -> None:
        old = self.coordinator.topics[a.topic]
        self.metrics.add_partitions([(a.topic, p) for p in range(old, a.partitions)])
        self.coordinator.add_partitions(a.topic, a.partitions)
        # Classic members see the partitions at their next metadata refresh; a consumer-
        # protocol member hears of them from the coordinator.
        now = self.loop.now
        for proc in self.members.up():
            if not proc.is_consumer:
                lag = self.rng.randrange(max(1, proc.spec.metadata_max_age_ms))
                self.loop.push(now + lag, EngineEvent.METADATA, (proc.index, proc.incarnation))

    def _coordinator_restart(self, a: Action) -> None:
        self.coordinator.go_down()
        self._end_at(a)

    def _coordinator_failover(self, a: Action) -> None:
        self.coordinator.go_down()
        self._end_at(a)
        # Its last load_ms: another node has the partition and replays the log.
        if a.load_ms > 0:
            self.schedule(replace(a, at_ms=a.until_ms - a.load_ms, kind=_K.COORDINATOR_LOADING, event=-1))

    # ---- windows --------------------------------------------------------------------------

    def _grouped(self, a: Action) -> bool:
        """Actions of a scale event (starts or closes of several members, one window)."""
        return (a.kind == _K.START or a.kind == _K.CLOSE) and a.until_ms >= 0

    def _open_window(self, a: Action) -> None:
        held: dict[str, int] = {}
        processes = self.members.processes
        for proc in processes.values():
            if proc.holding:
                held[proc.name] = len(proc.holding)
        target = processes.get(a.member)
        target_held = frozenset(target.holding) if target is not None else frozenset()
        timed = a.until_ms >= 0
        self.metrics.open_window(a.event, str(a.kind), a.member, a.until_ms, target_held, held,
                                 self.coordinator.generation, timed)


def _nothing(a: Action) -> None:
    """An action with nothing to undo at its end."""


def _never(a: Action) -> None:
    raise AssertionError(f"{a.kind} is a window, never an action to run")
