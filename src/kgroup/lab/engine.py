"""The lab's deterministic discrete-event engine: one group, virtual time, real code.

How this works: the engine wires four parts around one event loop and runs it to the
scenario's end, then reads the metrics.

- loop.py, the event loop: a heap of (time, sequence, ``EngineEvent``, payload); each kind
  has its handler in one table, built here.
- coordinator.py, the coordinator host: the real ``kgroup.core`` ``GroupCoordinatorShard``
  behind the core's ``CoordinatorHost`` (append to an in-memory group-metadata log, replay,
  deliver), the path the unit tests' group context takes too and the one the broker's
  shard mirrors. Its timers are data: one loop event at its next deadline.
- member_driver.py, the member driver: each member is a real ``kgroup.member`` state
  machine inside a ``Process``; the driver performs the actions it returns the way our
  asyncio client does, over a link with delay and jitter.
- disruptions.py, the scenario's actions (bounce, crash, pause, cut, scale...) started and
  ended at their times, and fast_forward.py, which skips quiet stretches.

Ties break by insertion order and every random draw comes from generators seeded by the
scenario: the same scenario gives the same result. The engine itself decides when the
group has converged (every partition held once, every running member steady, the
coordinator Stable): that starts the measurements, closes disruption windows, and is
where a fast-forward may start looking for a quiet stretch.
"""

from __future__ import annotations

import gc

from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.lab.coordinator import CoordinatorFactory, LabCoordinator
from kgroup.lab.disruptions import Disruptions
from kgroup.lab.fast_forward import FastForward
from kgroup.lab.loop import EngineEvent, EventLoop
from kgroup.lab.member_driver import MemberDriver
from kgroup.lab.metrics import Metrics
from kgroup.lab.scenario import Action, ActionKind, Scenario, timeline

__all__ = ["CoordinatorFactory", "Engine"]


class Engine:
    """Runs one scenario for one group; ``run()`` returns its ``Metrics``."""

    def __init__(self, scenario: Scenario, *, coordinator_factory: CoordinatorFactory = GroupCoordinatorShard,
                 record_timeline: bool = False) -> None:
        self.sc = scenario
        self.end = scenario.duration_ms
        self.loop = loop = EventLoop()
        partitions = [(t, p) for t, n in sorted(scenario.topics) for p in range(n)]
        self.metrics = metrics = Metrics(partitions, record_timeline=record_timeline)
        self.coordinator = coordinator = LabCoordinator(scenario, loop, metrics, coordinator_factory)
        self.members = members = MemberDriver(scenario, loop, metrics, coordinator)
        self.disruptions = disruptions = Disruptions(scenario, loop, metrics, coordinator, members)
        self.fast_forward = FastForward(scenario, loop, metrics, coordinator, members, disruptions.times)
        coordinator.members = members
        members.schedule = disruptions.schedule
        actions = timeline(scenario)
        self._final = _final_departures(actions)
        E = EngineEvent
        self._table = loop.table({
            E.ACTION: self._action,
            E.END: disruptions.end,
            E.TO_COORD: coordinator.receive,
            E.TO_MEMBER: members.reply_arrived,
            E.LOCAL: members.local,
            E.TICK: members.tick,
            E.COORD_TIMER: coordinator.timer,
            E.COMMIT: members.auto_commit_due,
            E.BUNDLE: members.bundle_due,
            E.FIND: members.find_done,
            E.METADATA: members.metadata_refreshed,
        })
        coordinator.start()
        for a in actions:
            disruptions.schedule(a)

    def _action(self, a: Action, t: int) -> None:
        """EngineEvent.ACTION: the disruption, then whether a member came or went for good."""
        self.disruptions.action(a, t)
        if a.kind is ActionKind.START:
            self.metrics.member_started(a.member)
        elif (a.at_ms, a.kind, a.member, a.event) in self._final:
            self.metrics.member_gone(a.member, self.members.processes[a.member].name)

    # ---- the run --------------------------------------------------------------------------

    def run(self) -> Metrics:
        """Simulate until the scenario's duration; return the metrics."""
        # A run allocates millions of short-lived records and events over a large live heap;
        # the cyclic collector would rescan that heap again and again (30% of the run time)
        # for cycles that a run does not make. Whatever is left is collected afterwards.
        collecting = gc.isenabled()
        gc.disable()
        try:
            jump = self.fast_forward.maybe_jump if self.sc.fast_forward else None
            self.loop.run(self.end, self._table, self.metrics.tick, jump, self._after_event)
            self.loop.now = self.end
            self.metrics.close(self.end)
            return self.metrics
        finally:
            if collecting:
                gc.enable()

    # ---- convergence ----------------------------------------------------------------------

    def _after_event(self) -> None:
        # Convergence needs every partition held and every running member steady.
        m = self.metrics
        if (m.open or not m.warm) and not m.unowned and not self.members.unsteady:
            self._check_converged()

    def _check_converged(self) -> None:
        m = self.metrics
        members = self.members
        if m.unowned or members.unsteady or members.disturbed:
            return
        if m.warm and not any(w.ended for w in m.open):
            return
        if self._converged_now():
            live = {p.name: None for p in members.up()}
            m.converged(live, sum(self.coordinator.topics.values()))
            self.loop.quiet_check = self.loop.now

    def _converged_now(self) -> bool:
        m = self.metrics
        members = self.members
        return (not m.unowned and not m.shared and not members.unsteady and not members.disturbed
                and any(p.up for p in members.processes.values()) and self.coordinator.stable())


_LIFECYCLE = (ActionKind.START, ActionKind.BOUNCE, ActionKind.CLOSE, ActionKind.CRASH)


def _final_departures(actions: list[Action]) -> set[tuple[int, ActionKind, int, int]]:
    """The actions after which a member never runs again: its last start-or-stop action,
    when that is a close or a crash with no restart. (Actions are in time order.)"""
    last: dict[int, Action] = {}
    for a in actions:
        if a.kind in _LIFECYCLE and a.member >= 0:
            last[a.member] = a
    return {(a.at_ms, a.kind, a.member, a.event) for a in last.values()
            if a.kind is ActionKind.CLOSE or (a.kind is ActionKind.CRASH and a.until_ms < 0)}
