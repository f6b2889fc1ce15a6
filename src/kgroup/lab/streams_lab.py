"""Streams groups in the lab: a Kafka Streams app's members on the streams protocol (KIP-1071).

How this works: the scenario's members are Kafka Streams instances (one stream thread each,
one process each, named m000.. as the lab's other members, so a restarted instance keeps its
state directory). Each topic of the scenario is the source of one subtopology; its
partitions are the tasks; unless listed as stateless, a subtopology has a changelog.

The coordinator is the real core (``GroupCoordinatorShard`` hosted by a
``CoordinatorHost`` over an in-memory log, as lab/coordinator.py hosts it): the heartbeat's
topology validation, epochs, the sticky task assignor with ``num.standby.replicas``,
warm-ups by lag (from the changelog offsets members report) and reconciliation (a task is
handed over only once its old owner has revoked it). The members are driven here, as Kafka
Streams' membership manager drives them: a heartbeat every interval the coordinator names,
reporting the tasks held and their changelog offsets (position and end, from
lab/restore.py's ledger), and one at once after taking a new assignment (tasks revoked are
closed, new ones opened, at once); a fenced or unknown member rejoins with epoch 0; a clean
close is a leave heartbeat (epoch -1; -2 for static members, ``members.static``, whose
instance id is their name); a crash, a GC pause or a cut link is silence.

The same timeline of actions as the other variants (scenario.timeline): start, bounce,
close, crash, gc_pause, cut and the churn generator; scale expands to starts and closes.
Network delay is the scenario's ``network.delay_ms`` each way. Everything runs on a
virtual clock (a heap of events), so the same scenario gives the same numbers.

What it measures (the summary row of results.py, with the streams cost columns): rebalances
(group epoch bumps), tasks moved and their restore cost (lab/restore.py), task-seconds
without an active owner, tasks active on two members at once (``double_ownership``) and a
process holding a task both as active and as standby or warm-up (``standby_with_active``).
"""

from __future__ import annotations

import heapq
import statistics
from dataclasses import replace
from typing import Any, Callable

from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.host import CoordinatorHost
from kgroup.core.streams_messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from kgroup.core.streams_topology import StreamsTopicInfo, StreamsTopology, Subtopology
from kgroup.lab.process import GROUP_ID
from kgroup.lab.restore import RestoreLedger, Task
from kgroup.lab.scenario import ActionKind, Scenario, timeline

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_NO = frozenset()


def changelog(topic: str) -> str:
    return f"{GROUP_ID}-{topic}-changelog"


def topology(sc: Scenario) -> StreamsTopology:
    """One subtopology per topic, with a compacted changelog unless the topic is stateless."""
    subs = []
    for topic, _ in sc.topics:
        logs = () if topic in sc.streams.stateless_topics else (
            StreamsTopicInfo(changelog(topic), 0, 0, (("cleanup.policy", "compact"),)),)
        subs.append(Subtopology(topic, source_topics=(topic,), state_changelog_topics=logs))
    return StreamsTopology(0, tuple(subs))


class _Host(CoordinatorHost):
    def __init__(self, coordinator: GroupCoordinatorShard, lab: "StreamsLab") -> None:
        super().__init__(coordinator, [])
        self.lab = lab

    def deliver(self, replies: tuple[tuple[Any, Any], ...]) -> None:
        for token, response in replies:
            self.lab.replied(token, response)


class _Instance:
    __slots__ = ("index", "name", "incarnation", "up", "paused_until", "member_id", "epoch",
                 "active", "standby", "warmup", "in_flight", "next_hb", "joined")

    def __init__(self, index: int) -> None:
        self.index = index
        self.name = f"m{index:03d}"
        self.incarnation = 0
        self.up = False
        self.paused_until = 0
        self.member_id = ""
        self.epoch = 0
        self.active = self.standby = self.warmup = _NO
        self.in_flight = False
        self.next_hb = -1
        self.joined = False


class StreamsLab:
    """One streams group under one scenario; ``run()`` returns its summary columns."""

    def __init__(self, sc: Scenario) -> None:
        assert sc.streams is not None
        self.sc = sc
        s = sc.streams
        m = sc.members
        config = replace(sc.coordinator, streams_session_timeout_ms=m.session_timeout_ms,
                         streams_max_session_timeout_ms=max(sc.coordinator.streams_max_session_timeout_ms,
                                                            m.session_timeout_ms),
                         streams_heartbeat_interval_ms=m.heartbeat_interval_ms,
                         streams_num_standby_replicas=s.num_standby_replicas,
                         streams_max_num_standby_replicas=max(sc.coordinator.streams_max_num_standby_replicas,
                                                              s.num_standby_replicas),
                         streams_num_warmup_replicas=s.num_warmup_replicas,
                         streams_acceptable_recovery_lag=s.acceptable_recovery_lag)
        self.now = 0
        self.seq = 0
        self.events: list[tuple[int, int, Callable[..., None], tuple]] = []
        self.host = _Host(GroupCoordinatorShard(config), self)
        self.topology = topology(sc)
        stateful = {t for t, _ in sc.topics if t not in s.stateless_topics}
        self.ledger = RestoreLedger(s, stateful)
        self.members: dict[int, _Instance] = {}
        self.delay = sc.network.delay_ms
        self.rebalances = 0
        self.epoch = 0
        self.double_ownership = 0
        self.standby_with_active = 0
        self.requests = 0
        self.timer_at: int | None = None
        self.open: list[tuple[int, int]] = []     # disruptions not yet converged: (start, over) ms
        self.converge_ms: list[int] = []
        image = {}
        for topic, n in sc.topics:
            image[topic] = (f"id-{topic}", n)
            if topic in stateful:
                image[changelog(topic)] = (f"id-{changelog(topic)}", n)
        self.host.apply(self.host.coordinator.update_topics(image, 0))
        self.host.apply(self.host.coordinator.load_complete(0))
        for a in timeline(sc):
            self.push(a.at_ms, self._action, a)

    # ---- the event loop -------------------------------------------------------------------

    def push(self, at: int, fn: Callable[..., None], *args: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, fn, args))

    def run(self) -> dict[str, Any]:
        end = self.sc.duration_ms
        while self.events and self.events[0][0] < end:
            at, _, fn, args = heapq.heappop(self.events)
            self.now = at
            fn(*args)
        self.now = end
        self.ledger.close(end)
        return self.summary()

    def _reschedule(self) -> None:
        deadline = self.host.next_deadline()
        if deadline is not None and (self.timer_at is None or deadline < self.timer_at or self.timer_at < self.now):
            self.timer_at = max(deadline, self.now)
            self.push(self.timer_at, self._timer, self.timer_at)

    def _timer(self, at: int) -> None:
        if self.timer_at == at:
            self.timer_at = None
            self.host.expire(self.now)
            self._observe()
        self._reschedule()

    # ---- the scenario's actions -----------------------------------------------------------

    def _action(self, a: Any) -> None:
        kind = a.kind
        member = self.members.get(a.member) if a.member >= 0 else None
        if a.event >= 0:                  # a disruption (not the members' first starts)
            over = max(a.at_ms, a.until_ms)
            self.open.append((a.at_ms, over))
            self.push(over + 1, self._converged_yet)
        if kind is ActionKind.START:
            self._start(a.member)
        elif kind in (ActionKind.BOUNCE, ActionKind.CLOSE):
            if member is not None and member.up:
                self._send(member, leave=True)
                self._down(member)
            if kind is ActionKind.BOUNCE:
                self.push(a.until_ms, self._start, a.member)
        elif kind is ActionKind.CRASH:
            if member is not None and member.up:
                self._down(member)
            if a.until_ms >= 0:
                self.push(a.until_ms, self._start, a.member)
        elif kind in (ActionKind.GC_PAUSE, ActionKind.CUT):
            if member is not None and member.up:
                member.paused_until = a.until_ms
                self.push(a.until_ms, self._resume, member, member.incarnation)

    def _start(self, index: int) -> None:
        member = self.members.setdefault(index, _Instance(index))
        if member.up:
            return
        member.up = True
        member.incarnation += 1
        member.member_id = f"{member.name}~{member.incarnation}"
        member.epoch = 0
        member.joined = False
        member.paused_until = 0
        member.in_flight = False
        self._heartbeat(member, member.incarnation)

    def _down(self, member: _Instance) -> None:
        """The process ends: its tasks are closed (its state directory stays)."""
        self._take(member, _NO, _NO, _NO)
        member.up = False

    def _resume(self, member: _Instance, incarnation: int) -> None:
        if member.up and member.incarnation == incarnation:
            member.paused_until = 0
            self._heartbeat(member, incarnation)

    # ---- the member's side ----------------------------------------------------------------

    def _heartbeat(self, member: _Instance, incarnation: int) -> None:
        if not member.up or member.incarnation != incarnation or member.paused_until > self.now:
            return
        if member.in_flight:
            return
        self._send(member)

    def _send(self, member: _Instance, *, leave: bool = False) -> None:
        joining = not member.joined
        held = member.active | member.standby | member.warmup
        offsets = tuple((t, p, int(self.ledger.position(member.name, (t, p), self.now)))
                        for t, p in sorted(self._known(member.name) | held)
                        if (t, p)[0] in self.ledger.stateful)
        ends = tuple((t, p, int(self.ledger.end(self.now))) for t, p in sorted(member.active)
                     if t in self.ledger.stateful)
        static = self.sc.members.static
        # A static member's close keeps its place (and tasks) for its session: epoch -2.
        leave_epoch = STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH
        req = StreamsGroupHeartbeatRequest(
            GROUP_ID, member.member_id, leave_epoch if leave else (0 if joining else member.epoch),
            instance_id=member.name if static else None,
            rebalance_timeout_ms=self.sc.members.rebalance_timeout_ms if joining else -1,
            topology=self.topology if joining else None,
            active_tasks=_ids(member.active), standby_tasks=_ids(member.standby), warmup_tasks=_ids(member.warmup),
            process_id=member.name if joining else None, client_id=member.name,
            task_offsets=offsets, task_end_offsets=ends)
        token = (member.index, member.incarnation, leave)
        if not leave:
            member.in_flight = True
        self.push(self.now + self.delay, self._arrive, token, req)

    def _known(self, process: str) -> set[Task]:
        return {task for (name, task) in self.ledger.positions if name == process}

    def _arrive(self, token: tuple, req: StreamsGroupHeartbeatRequest) -> None:
        self.requests += 1
        try:
            self.host.handle(self.host.coordinator.streams_group_heartbeat, req, token, self.now)
        except GroupError as exc:
            self.replied(token, exc)
        self._observe()
        self._reschedule()

    def replied(self, token: tuple, response: Any) -> None:
        self.push(self.now + self.delay, self._answer, token, response)

    def _answer(self, token: tuple, response: Any) -> None:
        index, incarnation, leave = token
        member = self.members[index]
        if leave or not member.up or member.incarnation != incarnation:
            return
        member.in_flight = False
        code = response.error_code if isinstance(response, StreamsGroupHeartbeatResponse) else response.code
        if code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self._take(member, _NO, _NO, _NO)          # lost its tasks: join again
            member.joined = False
            member.epoch = 0
            self._heartbeat(member, incarnation)
            return
        if code is not ErrorCode.NONE:
            self.push(self.now + self.sc.members.heartbeat_interval_ms, self._heartbeat, member, incarnation)
            return
        member.joined = True
        member.epoch = response.member_epoch
        changed = False
        if response.active_tasks is not None:
            new = (_set(response.active_tasks), _set(response.standby_tasks), _set(response.warmup_tasks))
            changed = new != (member.active, member.standby, member.warmup)
            self._take(member, *new)
        interval = response.heartbeat_interval_ms or self.sc.members.heartbeat_interval_ms
        # A new assignment is acknowledged at once (the next heartbeat reports it).
        self.push(self.now + (1 if changed else interval), self._heartbeat, member, incarnation)

    def _take(self, member: _Instance, active: frozenset, standby: frozenset, warmup: frozenset) -> None:
        """The member now holds these tasks: closed ones released, new ones opened."""
        ledger, now, name = self.ledger, self.now, member.name
        for task in member.active - active:
            ledger.release(name, task, now, active=True)
        for task in (member.standby | member.warmup) - (standby | warmup):
            ledger.release(name, task, now, active=False)
        for task in (standby | warmup) - (member.standby | member.warmup):
            ledger.hold(name, task, now, active=False)
        for task in sorted(active - member.active):
            ledger.hold(name, task, now, active=True)
        member.active, member.standby, member.warmup = active, standby, warmup
        if active & (standby | warmup):
            self.standby_with_active += len(active & (standby | warmup))
        self._check_double()
        self._converged_yet()

    def _check_double(self) -> None:
        """Tasks active on two members at once, counting (as the lab's consumer groups do)
        only members that run (not frozen) and that the coordinator counts as members: a
        frozen one whose session expired learns it is fenced when it wakes."""
        group = self.host.coordinator.streams_groups.get(GROUP_ID)
        seen: set[Task] = set()
        for m in self.members.values():
            if m.up and m.paused_until <= self.now and group is not None and m.member_id in group.members:
                twice = seen & m.active
                self.double_ownership += len(twice)
                seen |= m.active

    def _converged_yet(self) -> None:
        """Disruptions that are over converge once every task is active on exactly one
        running member and the coordinator's group is Stable."""
        if not self.open:
            return
        now = self.now
        if not any(over <= now for _, over in self.open):
            return
        group = self.host.coordinator.streams_groups.get(GROUP_ID)
        if group is None or group.state().value != "Stable":
            return
        running = [m for m in self.members.values() if m.up and m.paused_until <= now]
        if not all(m.joined and m.epoch == group.epoch for m in running):
            return                        # a member (re)joining is part of the disruption
        held: list[Task] = [t for m in running for t in m.active]
        if len(held) != self.sc.partition_count or len(set(held)) != len(held):
            return
        self.converge_ms += [now - start for start, over in self.open if over <= now]
        self.open = [(start, over) for start, over in self.open if over > now]

    def _observe(self) -> None:
        group = self.host.coordinator.streams_groups.get(GROUP_ID)
        if group is not None and group.epoch != self.epoch:
            if self.epoch:
                self.rebalances += 1
            self.epoch = group.epoch
        self._converged_yet()

    # ---- results --------------------------------------------------------------------------

    def final_active(self) -> dict[Task, list[str]]:
        """Each task's active holders among running members at the end."""
        out: dict[Task, list[str]] = {(t, p): [] for t, n in self.sc.topics for p in range(n)}
        for m in self.members.values():
            if m.up:
                for task in m.active:
                    out[task].append(m.name)
        return out

    def summary(self) -> dict[str, Any]:
        done = sorted(self.converge_ms)
        return {"unconverged_events": len(self.open),
                "converge_s_median": statistics.median(done) / 1000 if done else None,
                "converge_s_max": done[-1] / 1000 if done else None,
                "events": len(self.converge_ms) + len(self.open),"rebalances": self.rebalances, "moved": self.ledger.moves,
                "unowned_partition_s": self.ledger.unowned_task_ms / 1000,
                "double_ownership": self.double_ownership, "requests": self.requests,
                "standby_with_active": self.standby_with_active, **self.ledger.row()}


def _ids(tasks: frozenset) -> tuple:
    return tuple(sorted(tasks))


def _set(ids: Any) -> frozenset:
    return frozenset(ids or ())
