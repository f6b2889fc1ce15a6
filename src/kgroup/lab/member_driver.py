"""The lab's member driver: what our asyncio client does around a member state machine.

How this works: each ``Process`` holds a real ``kgroup.member`` state machine. The driver
hands it events (a reply, a timer, a poll, a found coordinator) and performs the actions it
returns, each through the handler its type has in one table (the action classes of
``kgroup.member`` are the closed set of kinds): a request goes over the member's link to
the coordinator, a rebalance callback changes what the process holds (which the metrics
record), a commit sends the positions it consumed. Callbacks, and the requests after them,
wait for the end of the poll batch being processed (a *bundle*), as inside a real
consumer's ``poll``. A reply becomes the member's event through a table keyed by the
request's ``RequestKind``. Processes start, close, crash, freeze and lose their link here
too; a restart is a new incarnation, so replies to an older one are never read.

During a fast-forward landing (``instant``) requests other than JoinGroup and SyncGroup
reach the coordinator at once and their replies come straight back, at their own
latencies: see fast_forward.py.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Callable

from kgroup.core.errors import GroupError
from kgroup.core.messages import (
    ConsumerGroupHeartbeatRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, LeavingMember,
    OffsetCommitPartition, OffsetCommitRequest, SyncGroupRequest,
)
from kgroup.error_codes import ErrorCode
from kgroup.lab.coordinator import PARKED, LabCoordinator, RequestKind, topic_id
from kgroup.lab.loop import EngineEvent, EventLoop
from kgroup.lab.metrics import Metrics
from kgroup.lab.process import GROUP_ID, Partition, Process
from kgroup.lab.scenario import Action, ActionKind, Scenario
from kgroup.member.actions import CommitOffsets, Failed, Fatal, FindCoordinator, RunAssigned, RunLost, RunRevoked
from kgroup.member.classic_events import (
    Close, CommitAnswered, CoordinatorFound, HeartbeatAnswered, JoinedMember, JoinGroupAnswered,
    MetadataUpdated, Poll, RequestFailed, RunAssign, RunOnAssignment, RunOpaqueAssigned, RunOpaqueLost,
    RunOpaqueRevoked, SendHeartbeat, SendJoinGroup, SendLeaveGroup, SendSyncGroup, Subscribe,
    SyncGroupAnswered, Tick,
)
from kgroup.member.classic_member import ClassicState
from kgroup.member.consumer_member import (
    ConsumerGroupHeartbeatAnswered, ConsumerState, RefreshTopicNames, SendConsumerGroupHeartbeat,
    TopicNames,
)

_TO_COORD, _TO_MEMBER, _LOCAL, _TICK = EngineEvent.TO_COORD, EngineEvent.TO_MEMBER, EngineEvent.LOCAL, EngineEvent.TICK
_COMMIT, _BUNDLE, _FIND = EngineEvent.COMMIT, EngineEvent.BUNDLE, EngineEvent.FIND
# Module names for the kinds a hot path uses (an enum's attribute costs a lookup on its class).
_HEARTBEAT, _CONSUMER_GROUP_HEARTBEAT = RequestKind.HEARTBEAT, RequestKind.CONSUMER_GROUP_HEARTBEAT
_LEAVE_GROUP, _OFFSET_COMMIT = RequestKind.LEAVE_GROUP, RequestKind.OFFSET_COMMIT
# Actions that wait for the end of the poll batch (callbacks, and the rejoin after them).
_CALLBACKS = frozenset({RunRevoked, RunAssigned, RunLost, SendJoinGroup})
_STEADY = (ClassicState.STABLE, ConsumerState.STABLE)
FATAL_EXIT = -2                 # Action.event of a process ending on a fatal group error


# ---- replies as the member's events, by request kind --------------------------------------

def _joined(rid: int, r: Any, now: int) -> JoinGroupAnswered:
    return JoinGroupAnswered(rid, r.error, now, r.generation_id, r.protocol_name, r.leader, r.member_id,
                             tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata) for m in r.members),
                             r.skip_assignment)


def _committed(rid: int, r: Any, now: int) -> CommitAnswered:
    errors = [p.error for p in r.partitions if p.error is not ErrorCode.NONE]
    return CommitAnswered(errors[0] if errors else ErrorCode.NONE, now)


def _consumer_heartbeat_answered(rid: int, r: Any, now: int) -> ConsumerGroupHeartbeatAnswered:
    return ConsumerGroupHeartbeatAnswered(rid, r.error, now, r.member_id or "", r.member_epoch,
                                          r.heartbeat_interval_ms, r.assignment, r.error_message or "")


Answer = Callable[[int, Any, int], Any]
# Request kind -> (its response as an event, its refusal (a GroupError) as an event). A
# LeaveGroup's answer is never read: the member is gone.
_ANSWERS: dict[RequestKind, tuple[Answer, Answer]] = {
    RequestKind.HEARTBEAT: (lambda rid, r, now: HeartbeatAnswered(rid, r.error, now),
                            lambda rid, e, now: HeartbeatAnswered(rid, e.code, now)),
    RequestKind.CONSUMER_GROUP_HEARTBEAT: (
        _consumer_heartbeat_answered,
        lambda rid, e, now: ConsumerGroupHeartbeatAnswered(rid, e.code, now, error_message=e.message)),
    RequestKind.JOIN_GROUP: (_joined, lambda rid, e, now: JoinGroupAnswered(rid, e.code, now)),
    RequestKind.SYNC_GROUP: (lambda rid, r, now: SyncGroupAnswered(rid, r.error, now, r.assignment),
                             lambda rid, e, now: SyncGroupAnswered(rid, e.code, now)),
    RequestKind.OFFSET_COMMIT: (_committed, lambda rid, e, now: CommitAnswered(e.code, now)),
}


class MemberDriver:
    """Every consumer process of the group, and what the driver of each does."""

    def __init__(self, scenario: Scenario, loop: EventLoop, metrics: Metrics,
                 coordinator: LabCoordinator) -> None:
        self.sc = scenario
        self.loop = loop
        self.metrics = metrics
        self.coordinator = coordinator
        self.topics = coordinator.topics
        self.processes: dict[int, Process] = {}
        self.unsteady: set[int] = set()
        self.disturbed: set[int] = set()        # paused or cut processes
        self.member_events = 0
        self.commit_ids = 0
        self.instant = False                    # a fast-forward landing: see the module comment
        # Where a process that ended on a fatal error is scheduled to crash (and come back).
        self.schedule: Callable[[Action], None] = _unwired
        self._push = loop.push
        # Member action type -> what the driver does for it.
        self.action_table: dict[type, Callable[[Process, Any], None]] = {
            SendHeartbeat: self._send_heartbeat,
            SendConsumerGroupHeartbeat: self._send_consumer_group_heartbeat,
            SendJoinGroup: self._send_join_group,
            SendSyncGroup: self._send_sync_group,
            SendLeaveGroup: self._send_leave_group,
            RunAssigned: self._run_assigned,
            RunRevoked: self._run_released,
            RunLost: self._run_released,
            CommitOffsets: self._commit_offsets,
            FindCoordinator: self._find_coordinator,
            RefreshTopicNames: self._refresh_topic_names,
            Fatal: self._fatal,
            # An unexpected SyncGroup error: the application sees it raised from one poll and
            # polls on; the member has already sent its JoinGroup again.
            Failed: _nothing,
            # A built-in assignor has no on_assignment callback, and the lab runs none of a
            # plug-in's (nothing the lab measures depends on it).
            RunOnAssignment: _nothing,
            # A member of a group of another protocol type than "consumer": the lab's are not.
            RunAssign: _not_a_consumer_group,
            RunOpaqueAssigned: _not_a_consumer_group,
            RunOpaqueRevoked: _not_a_consumer_group,
            RunOpaqueLost: _not_a_consumer_group,
        }

    # ---- loop events ----------------------------------------------------------------------

    def tick(self, payload: tuple[int, int], t: int) -> None:
        """EngineEvent.TICK: the member's own timer is due (if it is still that timer)."""
        index, inc = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.tick_at == self.loop.now:
            proc.tick_at = None
            self._wake(proc)

    def reply_arrived(self, payload: tuple, t: int) -> None:
        """EngineEvent.TO_MEMBER: a reply reached its member (lost if the link is cut)."""
        index, inc, kind, rid, response = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.up:
            if proc.cut:
                self._lost_in_cut(proc, rid)
            else:
                self.deliver(proc, self._answer(kind, rid, response))

    def local(self, payload: tuple[int, int, Any], t: int) -> None:
        """EngineEvent.LOCAL: an event of the member's own (a failed request, topic names)."""
        index, inc, event = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.up:
            self.deliver(proc, replace(event, now_ms=self.loop.now))

    def auto_commit_due(self, payload: tuple[int, int, int], t: int) -> None:
        """EngineEvent.COMMIT: the auto-commit interval passed (unless re-armed since)."""
        index, inc, seq = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.up and proc.commit_seq == seq:
            self.auto_commit(proc)
            self.arm_commit(proc, t + proc.spec.auto_commit_interval_ms)

    def bundle_due(self, payload: tuple[int, int], t: int) -> None:
        """EngineEvent.BUNDLE: the poll batch ended; run the rebalance work that waited."""
        index, inc = payload
        proc = self.processes[index]
        if (proc.incarnation == inc and proc.up and proc.bundle is not None
                and proc.bundle_at == self.loop.now):
            if proc.paused_until >= 0:
                return                               # rescheduled when it wakes
            bundle, proc.bundle = proc.bundle, None
            self.perform(proc, bundle)
            self.after(proc)

    def find_done(self, payload: tuple[int, int], t: int) -> None:
        """EngineEvent.FIND: a FindCoordinator round trip ended."""
        index, inc = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.up:
            self._find(proc)

    def metadata_refreshed(self, payload: tuple[int, int], t: int) -> None:
        """EngineEvent.METADATA: the member's metadata refresh shows the topics as they are."""
        index, inc = payload
        proc = self.processes[index]
        if proc.incarnation == inc and proc.up:
            self.deliver(proc, MetadataUpdated(tuple(sorted(self.topics.items())), self.loop.now))

    # ---- the state machine ----------------------------------------------------------------

    def deliver(self, proc: Process, event: Any) -> None:
        """Hand one event to a member's state machine and perform what it asks."""
        if proc.paused_until >= 0:
            proc.deferred.append(event)
            return
        self.member_events += 1
        actions = proc.sm.handle(event)
        if actions:
            if proc.bundle is not None:
                proc.bundle.extend(actions)
            elif proc.spec.processing_ms > 1 and any(type(a) in _CALLBACKS for a in actions):
                now = self.loop.now
                at = proc.next_poll(now)
                if at > now:
                    proc.bundle = list(actions)
                    proc.bundle_at = at
                    self._push(at, _BUNDLE, (proc.index, proc.incarnation))
                else:
                    self.perform(proc, actions)
            else:
                self.perform(proc, actions)
        self.after(proc)

    def _wake(self, proc: Process) -> None:
        """The member's own timer is due: a running consumer is polling, so tell it so."""
        now = self.loop.now
        self.deliver(proc, Poll(now) if proc.running else Tick(now))

    def poll(self, proc: Process) -> None:
        """The consumer polls now (a fast-forward landing on its heartbeat phase)."""
        proc.tick_at = None
        self.deliver(proc, Poll(self.loop.now))

    def after(self, proc: Process) -> None:
        """Re-arm the member's timer and update its steadiness."""
        if not proc.up:
            return
        sm = proc.sm
        deadline = sm.next_deadline()
        if deadline is not None and proc.paused_until < 0:
            now = self.loop.now
            deadline = max(deadline, now)
            if proc.tick_at is None or deadline < proc.tick_at or proc.tick_at < now:
                proc.tick_at = deadline
                self._push(deadline, _TICK, (proc.index, proc.incarnation))
        steady = sm.state in _STEADY and proc.bundle is None
        if steady != proc.steady:
            proc.steady = steady
            if steady:
                self.unsteady.discard(proc.index)
            else:
                self.unsteady.add(proc.index)
        stopped = not steady and not proc.holding and proc.paused_until < 0 and not proc.cut
        if stopped != proc.stopped:
            proc.stopped = stopped
            self.metrics.stopped(proc.name, stopped)

    # ---- member actions, by type ----------------------------------------------------------

    def perform(self, proc: Process, actions: list) -> None:
        table = self.action_table
        for a in actions:
            table[type(a)](proc, a)

    def _send_heartbeat(self, proc: Process, a: SendHeartbeat) -> None:
        self._send(proc, _HEARTBEAT, a.request_id,
                   HeartbeatRequest(a.group_id, a.generation, a.member_id, a.group_instance_id))

    def _send_consumer_group_heartbeat(self, proc: Process, a: SendConsumerGroupHeartbeat) -> None:
        self._send(proc, _CONSUMER_GROUP_HEARTBEAT, a.request_id, ConsumerGroupHeartbeatRequest(
            group_id=a.group_id, member_id=a.member_id, member_epoch=a.member_epoch,
            instance_id=a.instance_id, rebalance_timeout_ms=a.rebalance_timeout_ms,
            subscribed_topic_names=a.subscribed_topic_names, server_assignor=a.server_assignor,
            owned=a.owned, client_id=proc.name, client_host="/lab", api_version=1))

    def _send_join_group(self, proc: Process, a: SendJoinGroup) -> None:
        self._send(proc, RequestKind.JOIN_GROUP, a.request_id, JoinGroupRequest(
            group_id=a.group_id, member_id=a.member_id, protocol_type=a.protocol_type,
            protocols=a.protocols, session_timeout_ms=a.session_timeout_ms,
            rebalance_timeout_ms=a.rebalance_timeout_ms, group_instance_id=a.group_instance_id,
            client_id=proc.name, client_host="/lab", api_version=9, reason=a.reason or None))

    def _send_sync_group(self, proc: Process, a: SendSyncGroup) -> None:
        self._send(proc, RequestKind.SYNC_GROUP, a.request_id, SyncGroupRequest(
            a.group_id, a.generation, a.member_id, a.group_instance_id, a.protocol_type,
            a.protocol, a.assignments))

    def _send_leave_group(self, proc: Process, a: SendLeaveGroup) -> None:
        self._send(proc, _LEAVE_GROUP, None, LeaveGroupRequest(
            a.group_id, (LeavingMember(a.member_id, a.group_instance_id, a.reason or None),)))

    def _run_assigned(self, proc: Process, a: RunAssigned) -> None:
        proc.settle(self.loop.now)
        committed = self.metrics.last_committed
        holding, positions = proc.holding, proc.positions
        parts = a.partitions
        for p in parts:
            holding.add(p)
            positions[p] = float(committed.get(p, 0))
        self.metrics.assign(proc.index, proc.name, parts, committed, self.conflicts)

    def _run_released(self, proc: Process, a: RunRevoked | RunLost) -> None:
        proc.settle(self.loop.now)
        parts = a.partitions
        for p in parts:
            if p in proc.positions:
                self.metrics.consumed(p, proc.positions.pop(p))
            proc.holding.discard(p)
        self.metrics.release(proc.index, proc.name, parts)

    def _commit_offsets(self, proc: Process, a: CommitOffsets) -> None:
        self._commit(proc, a.partitions, a.generation, a.member_id)

    def _find_coordinator(self, proc: Process, a: FindCoordinator) -> None:
        if not proc.finding:
            proc.finding = True
            self._push(self.loop.now + 2 * proc.delay, _FIND, (proc.index, proc.incarnation))

    def _refresh_topic_names(self, proc: Process, a: RefreshTopicNames) -> None:
        now = self.loop.now
        names = tuple((topic_id(t), t) for t in sorted(self.topics))
        self._push(now + 2 * proc.delay, _LOCAL, (proc.index, proc.incarnation, TopicNames(names, now)))

    def _fatal(self, proc: Process, a: Fatal) -> None:
        # The application sees the exception and exits; a supervisor restarts it.
        self.metrics.fatal += 1
        now = self.loop.now
        back = proc.spec.fatal_restart_ms
        self.schedule(Action(now, ActionKind.CRASH, proc.index, now + back if back else -1, event=FATAL_EXIT))

    # ---- ownership and commits ------------------------------------------------------------

    def conflicts(self, index: int, p: Partition) -> int:
        """Other running holders of ``p`` that the coordinator still counts as members."""
        me = self.processes[index]
        is_member = self.coordinator.is_member
        if not me.running or not is_member(me.sm.member_id):
            return 0
        found = 0
        for other in self.metrics.holders.get(p, ()):
            if other != index:
                proc = self.processes[other]
                if proc.running and is_member(proc.sm.member_id):
                    found += 1
        return found

    def _commit(self, proc: Process, parts, generation: int, member_id: str, only_changed: bool = False) -> None:
        proc.settle(self.loop.now)
        offsets = []
        positions = proc.positions
        last = proc.last_commit
        for p in (sorted(parts) if len(parts) > 1 else parts):
            pos = positions.get(p)
            if pos is None:
                continue
            offset = int(pos)
            if only_changed and last.get(p) == offset:
                continue
            last[p] = offset
            offsets.append(OffsetCommitPartition(p[0], p[1], offset))
        if not offsets:
            return
        self.commit_ids += 1
        self._send(proc, _OFFSET_COMMIT, -self.commit_ids, OffsetCommitRequest(
            GROUP_ID, generation, member_id, tuple(offsets),
            proc.sm.config.group_instance_id, api_version=9 if proc.is_consumer else 8))

    def auto_commit(self, proc: Process) -> None:
        """enable.auto.commit: what the member has consumed of what it holds, every interval."""
        if proc.running and proc.sm.in_group:
            self._commit(proc, proc.holding, proc.sm.generation, proc.sm.member_id, only_changed=True)

    def arm_commit(self, proc: Process, at: int) -> None:
        proc.commit_at = at
        self._push(at, _COMMIT, (proc.index, proc.incarnation, proc.commit_seq))

    def _find(self, proc: Process) -> None:
        """A FindCoordinator round trip ended: found, or try again after a backoff."""
        if self.coordinator.up and not proc.cut:
            proc.finding = False
            proc.find_backoff = 100
            self.deliver(proc, CoordinatorFound(self.loop.now))
        else:
            self._push(self.loop.now + proc.find_backoff, _FIND, (proc.index, proc.incarnation))
            proc.find_backoff = min(1000, proc.find_backoff * 2)

    # ---- the link -------------------------------------------------------------------------

    def _send(self, proc: Process, kind: RequestKind, rid: int | None, request: Any) -> None:
        token = (proc.index, proc.incarnation, kind, rid)
        if proc.cut:
            self._lost_in_cut(proc, rid)
            return
        if self.instant and kind not in PARKED:
            self.coordinator.handle_request(token, request)
        else:
            self._push(proc.to_coordinator(self.loop.now), _TO_COORD, (token, request))

    def _lost_in_cut(self, proc: Process, rid: int | None) -> None:
        if rid is not None and rid > 0:
            now = self.loop.now
            self._push(now + self.sc.network.request_timeout_ms, _LOCAL,
                       (proc.index, proc.incarnation, RequestFailed(rid, now)))

    def refused(self, token: tuple) -> None:
        """The coordinator is down: the request fails (its connection dropped)."""
        index, inc, kind, rid = token
        proc = self.processes[index]
        if rid is not None and rid > 0 and proc.incarnation == inc and proc.up:
            now = self.loop.now
            self._push(proc.to_member(now), _LOCAL, (index, inc, RequestFailed(rid, now)))

    def reply(self, token: tuple, response: Any) -> None:
        """The coordinator answered (a response, or the GroupError it raised): send it back."""
        index, inc, kind, rid = token
        if kind is _LEAVE_GROUP:
            return
        proc = self.processes[index]
        if proc.incarnation != inc or not proc.up:
            return
        loop = self.loop
        if self.instant:
            if kind is _OFFSET_COMMIT and not isinstance(response, GroupError) and all(
                    p.error is ErrorCode.NONE for p in response.partitions):
                # A fast-forward's replayed commit went through: the member acts only on
                # errors, and handing it an event now would fire its overdue heartbeat
                # early, off its phase.
                return
            sent = loop.now
            loop.now = proc.to_member(sent)
            self.deliver(proc, self._answer(kind, rid, response))
            loop.now = sent
            return
        self._push(proc.to_member(loop.now), _TO_MEMBER, (index, inc, kind, rid, response))

    def _answer(self, kind: RequestKind, rid: int, response: Any) -> Any:
        """A coordinator response (or raised error) as the member state machine's event."""
        answered, refused = _ANSWERS[kind]
        if isinstance(response, GroupError):
            return refused(rid, response, self.loop.now)
        return answered(rid, response, self.loop.now)

    # ---- processes come and go ------------------------------------------------------------

    def up(self) -> list[Process]:
        return [p for _, p in sorted(self.processes.items()) if p.up]

    def start(self, index: int) -> None:
        proc = self.processes.get(index)
        if proc is None:
            rng = random.Random(f"member:{self.sc.seed}:{index}")
            proc = self.processes[index] = Process(index, self.sc.members, self.sc.network, rng)
        elif proc.up:
            return
        now = self.loop.now
        proc.start(now)
        self.unsteady.add(index)
        # A consumer looks its topics up before it subscribes, and finds its coordinator.
        if not proc.is_consumer:
            self.deliver(proc, MetadataUpdated(tuple(sorted(self.topics.items())), now))
        self.deliver(proc, Subscribe(tuple(sorted(self.topics)), now))
        if not proc.finding:
            proc.finding = True
            self._push(now + 2 * proc.delay, _FIND, (index, proc.incarnation))
        self.arm_commit(proc, now + proc.spec.auto_commit_interval_ms)

    def close(self, index: int) -> None:
        """A clean shutdown: the member commits, revokes and leaves (a static one stays)."""
        proc = self.processes.get(index)
        if proc is None or not proc.up:
            return
        if proc.paused_until >= 0:
            self.resume(proc)
        if proc.bundle is not None:
            bundle, proc.bundle = proc.bundle, None
            self.perform(proc, bundle)
        self.member_events += 1
        self.perform(proc, proc.sm.handle(Close(self.loop.now)))
        self._gone(proc)

    def crash(self, index: int) -> None:
        """The process dies: no leave, no callbacks; what it held is simply not consumed."""
        proc = self.processes.get(index)
        if proc is None or not proc.up:
            return
        proc.settle(self.loop.now)
        for p, pos in proc.positions.items():
            self.metrics.consumed(p, pos)
        self.metrics.release(proc.index, proc.name, frozenset(proc.holding))
        proc.holding = set()
        proc.positions = {}
        self._gone(proc)

    def _gone(self, proc: Process) -> None:
        proc.up = False
        proc.incarnation += 1          # replies to the dead process are never read
        proc.tick_at = None
        proc.bundle = None
        proc.deferred = []
        self.unsteady.discard(proc.index)
        self.disturbed.discard(proc.index)
        if proc.stopped:
            proc.stopped = False
            self.metrics.stopped(proc.name, False)
        if proc.holding:               # a clean close revoked everything; a dead one cannot
            self.metrics.release(proc.index, proc.name, frozenset(proc.holding))
            proc.holding = set()

    def pause(self, index: int, until_ms: int) -> None:
        """The process freezes (a long GC pause) until ``until_ms``."""
        proc = self.processes.get(index)
        if proc is not None and proc.up and proc.paused_until < 0:
            proc.settle(self.loop.now)
            proc.paused_until = until_ms
            self.disturbed.add(proc.index)
            self.after(proc)

    def wake_from_pause(self, index: int) -> None:
        proc = self.processes.get(index)
        if proc is not None and proc.up and proc.paused_until >= 0:
            self.resume(proc)

    def resume(self, proc: Process) -> None:
        """A frozen process runs again: its timers see how long it was gone first."""
        now = self.loop.now
        proc.paused_until = -1
        proc.since = now
        self.disturbed.discard(proc.index)
        waiting, proc.deferred = proc.deferred, []
        self.deliver(proc, Tick(now))
        for event in waiting:
            if proc.up:
                self.deliver(proc, replace(event, now_ms=now))
        if proc.up and proc.bundle is not None:
            proc.bundle_at = proc.next_poll(now)
            self._push(proc.bundle_at, _BUNDLE, (proc.index, proc.incarnation))
        self._zombie_check(proc)
        self.after(proc)

    def cut(self, index: int, on: bool) -> None:
        """Cut the member's link (it can neither fetch nor talk to the coordinator), or heal it."""
        proc = self.processes.get(index)
        if proc is None or not (proc.up if on else proc.cut):
            return
        proc.settle(self.loop.now)
        proc.cut = on
        if on:
            self.disturbed.add(proc.index)
        else:
            self.disturbed.discard(proc.index)
            self._zombie_check(proc)
            self.after(proc)

    def set_link(self, index: int, delay_ms: int, jitter_ms: int) -> None:
        proc = self.processes.get(index)
        if proc is not None:
            proc.delay, proc.jitter = delay_ms, jitter_ms

    def _zombie_check(self, proc: Process) -> None:
        """A process that comes back holding partitions may now consume beside their new owner."""
        for p in sorted(proc.holding):
            self.metrics.double_ownership += self.conflicts(proc.index, p)


def _nothing(proc: Process, action: Any) -> None:
    """An action with nothing for the lab's driver to do."""


def _not_a_consumer_group(proc: Process, action: Any) -> None:
    raise RuntimeError(f"{type(action).__name__}: the lab simulates consumer groups only")


def _unwired(action: Action) -> None:
    raise RuntimeError("the member driver was not wired to the scenario's actions")
