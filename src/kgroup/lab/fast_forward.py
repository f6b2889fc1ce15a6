"""Fast-forward: skip a quiet stretch of a run in one step, measuring the same.

How this works: when the group is quiet (every running member steady, every partition held
by one running member, nothing in flight, the coordinator Stable) and the next scenario
action is far off, the loop jumps to shortly before it. At the landing time each member
polls and heartbeats at once and the coordinator receives those heartbeats before any of
its timers fire, so the jump is exactly what a run would give whose members had
heartbeated just then; each member's last heartbeat and auto-commit before the landing are
replayed at their own phase, so the action finds what a full simulation would have left.
A member with no running process (crashed, or a static one away) is the one thing the
coordinator acts on by itself: the jump lands before its session runs out. Off with
``fast_forward: false``.
"""

from __future__ import annotations

from kgroup.core.group_configs import CONSUMER_HEARTBEAT_INTERVAL, configured_value
from kgroup.lab.coordinator import LabCoordinator
from kgroup.lab.loop import EventLoop
from kgroup.lab.member_driver import MemberDriver
from kgroup.lab.metrics import Metrics
from kgroup.lab.process import GROUP_ID, Process
from kgroup.lab.scenario import Scenario

_HEARTBEAT, _AUTO_COMMIT = 0, 1          # what a member does at a landing


class FastForward:
    """Looks for quiet stretches (the loop asks from `loop.quiet_check` on) and skips them."""

    def __init__(self, scenario: Scenario, loop: EventLoop, metrics: Metrics, coordinator: LabCoordinator,
                 members: MemberDriver, scenario_times: list[int]) -> None:
        self.loop = loop
        self.metrics = metrics
        self.coordinator = coordinator
        self.members = members
        self.scenario_times = scenario_times     # a heap of the scenario's coming action times
        self.end = scenario.duration_ms
        self.jumps = 0
        self.jumped_ms = 0
        m = scenario.members
        beat = int(configured_value(scenario.coordinator, GROUP_ID, CONSUMER_HEARTBEAT_INTERVAL)) \
            if m.kind.by_epoch \
            else m.heartbeat_interval_ms
        self._period = max(beat, m.auto_commit_interval_ms)
        # A landing replays one heartbeat and one commit per member; simulating a stretch
        # costs a heartbeat per interval and a commit per auto-commit interval. Jump only
        # when the stretch would cost half again what the landing does.
        self._worth_jumping = int(3 / (1 / beat + 1 / m.auto_commit_interval_ms))
        self._max_latency = scenario.network.delay_ms + scenario.network.jitter_ms

    def maybe_jump(self, t: int) -> None:
        """Skip the quiet stretch from ``t``, if there is one worth skipping."""
        loop, members = self.loop, self.members
        loop.quiet_check = t + self._period // 4
        if (loop.in_flight or loop.special or members.unsteady or not self.metrics.warm
                or not self.coordinator.stable()):
            return
        processes = members.processes
        if any(p.cut for p in processes.values()):
            return                        # its requests time out at their own pace
        # A frozen process does nothing until it wakes (a scheduled action); the running
        # ones must not be sharing a partition.
        if self.metrics.shared:
            frozen = {p.index for p in processes.values() if p.up and p.paused_until >= 0}
            for holders in self.metrics.holders.values():
                if len(holders) > 1 and sum(1 for h in holders if h not in frozen) > 1:
                    return
        upcoming = self.scenario_times[0] if self.scenario_times else self.end
        orphan = self.coordinator.session_deadline({p.sm.member_id for p in processes.values() if p.running})
        if orphan is not None:
            upcoming = min(upcoming, orphan)
        land = min(upcoming, self.end) - 2 * self._max_latency - 1
        if land - t < self._worth_jumping:
            return                        # the landing would cost more than the stretch
        landings = []
        for proc in members.up():
            if not proc.running:
                continue
            due = proc.sm.next_deadline()
            beat = self._heartbeat_period(proc)
            if due is None or beat <= 0:
                return
            last = land - 2 * self._max_latency
            landings.append((due + ((last - due) // beat) * beat, _HEARTBEAT, proc.index))
            every = proc.spec.auto_commit_interval_ms
            landings.append((proc.commit_at + ((last - proc.commit_at) // every) * every, _AUTO_COMMIT,
                             proc.index))
        landings.sort()
        self.jumps += 1
        self.jumped_ms += land - t
        members.instant = True
        try:
            for at, what, index in landings:
                proc = processes[index]
                loop.now = at
                if what == _HEARTBEAT:
                    members.poll(proc)
                else:
                    members.auto_commit(proc)
                    proc.commit_seq += 1
                    members.arm_commit(proc, at + proc.spec.auto_commit_interval_ms)
        finally:
            members.instant = False
        loop.now = land
        self.metrics.tick(land)
        # Timer events queued before the landing are stale now: arm afresh.
        self.coordinator.timer_at = None
        self.coordinator.reschedule()
        loop.quiet_check = land

    def _heartbeat_period(self, proc: Process) -> int:
        interval = proc.sm.heartbeat_interval_ms if proc.is_consumer else proc.spec.heartbeat_interval_ms
        return interval + 2 * proc.delay
