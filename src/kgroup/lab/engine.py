"""The lab's deterministic discrete-event engine: one group, virtual time, real code.

How this works: a heap of (time, sequence, kind, payload) events drives everything. The
coordinator is the real ``kgroup.core`` ``GroupCoordinatorShard``: requests reach it after the
sender's link delay, its handler's records are appended to an in-memory group-metadata log
and replayed (as the broker does), and its replies travel back over the link. Each member
is a real ``kgroup.member`` state machine inside a ``Process``; the engine performs the
actions it returns (send this request, run this callback, commit these offsets) the way our
asyncio client does, except that callbacks and the requests that follow them wait for the
end of the poll batch being processed. Timers on both sides are data (``next_deadline``),
so the engine wakes each exactly when due. Ties break by insertion order and every random
draw comes from generators seeded by the scenario: the same scenario gives the same result.

Fast-forward: when the group is quiet (every running member steady, every partition held,
nothing in flight, the coordinator Stable) and the next scenario action is far off, the
engine jumps to shortly before it. At the landing time each member polls and heartbeats at
once and the coordinator receives those heartbeats before any of its timers fire, so the
jump is exactly what a run would give whose members had heartbeated just then; then normal
simulation resumes for two heartbeat intervals before the action. Off with
``fast_forward: false``.
"""

from __future__ import annotations

import gc
import heapq
import random
from dataclasses import replace
from typing import Any, Callable

from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import GroupError
from kgroup.core.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeavingMember,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from kgroup.core.records import OffsetCommitRecord
from kgroup.core.result import Result
from kgroup.core.state import counter_member_ids
from kgroup.core.timers import classic_session_key, consumer_session_key
from kgroup.error_codes import ErrorCode
from kgroup.lab.metrics import Metrics
from kgroup.lab.process import GROUP_ID, Process
from kgroup.lab.scenario import Action, Scenario, timeline
from kgroup.member import (
    ClassicState,
    Close,
    CommitOffsets,
    CommitAnswered,
    ConsumerGroupHeartbeatAnswered,
    ConsumerState,
    CoordinatorFound,
    Fatal,
    FindCoordinator,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MetadataUpdated,
    Poll,
    RefreshTopicNames,
    RequestFailed,
    RunAssigned,
    RunLost,
    RunRevoked,
    SendConsumerGroupHeartbeat,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    Subscribe,
    SyncGroupAnswered,
    Tick,
    TopicNames,
)

# Event kinds, in the heap as small ints.
ACTION, END, TO_COORD, TO_MEMBER, LOCAL, TICK, COORD_TIMER, COMMIT, BUNDLE, FIND, METADATA = range(11)
# TO_COORD and TO_MEMBER are in flight on a link; LOCAL, BUNDLE, FIND and METADATA are
# "special" (pending work that is not a plain timer): both block a fast-forward.
_CALLBACKS = frozenset({RunRevoked, RunAssigned, RunLost, SendJoinGroup})
_STEADY = (ClassicState.STABLE, ConsumerState.STABLE)
_DISRUPTIVE = ("bounce", "crash", "close", "gc_pause", "cut", "network", "add_partitions",
               "coordinator_restart", "coordinator_failover", "start")
LOG_COMPACT_AT = 50_000
FATAL_EXIT = -2                 # Action.event of a process ending on a fatal group error

CoordinatorFactory = Callable[..., GroupCoordinatorShard]


def topic_id(name: str) -> str:
    return f"id-{name}"


class Engine:
    """Runs one scenario for one group; ``run()`` returns its ``Metrics``."""

    def __init__(self, scenario: Scenario, *, coordinator_factory: CoordinatorFactory = GroupCoordinatorShard,
                 record_timeline: bool = False) -> None:
        self.sc = scenario
        self.factory = coordinator_factory
        self.rng = random.Random(f"engine:{scenario.seed}")
        self.now = 0
        self.end = scenario.duration_ms
        self._heap: list[tuple[int, int, int, Any]] = []
        self._seq = 0
        self.in_flight = 0
        self.special = 0
        self.log: list = []
        self.new_member_id = counter_member_ids()
        self.config: GroupConfig = scenario.coordinator
        self.topics: dict[str, int] = dict(scenario.topics)
        self.coord = self._new_coordinator()
        self.coord_up = True
        self.coord_loading = False       # a coordinator_failover's new node, still loading
        self.coord_timer_at: int | None = None
        self.outstanding: dict[tuple, None] = {}
        self.commit_ids = 0
        self.member_events = 0
        self.requests = 0
        self.jumps = 0
        self.jumped_ms = 0
        self.generation = 0
        self.actions = timeline(scenario)
        self.scenario_times: list[int] = []
        self.processes: dict[int, Process] = {}
        self.unsteady: set[int] = set()
        self.disturbed: set[int] = set()        # paused or cut processes
        self.metrics = Metrics(self._partitions(), record_timeline=record_timeline)
        self._quiet_check = 0
        self._instant = False
        self._scaling: set[int] = set()
        m = scenario.members
        beat = self.config.consumer_heartbeat_interval(GROUP_ID) if m.protocol == "consumer" \
            else m.heartbeat_interval_ms
        self._period = max(beat, m.auto_commit_interval_ms)
        # A landing replays one heartbeat and one commit per member; simulating a stretch
        # costs a heartbeat per interval and a commit per auto-commit interval. Jump only
        # when the stretch would cost half again what the landing does.
        self._worth_jumping = int(3 / (1 / beat + 1 / m.auto_commit_interval_ms))
        self._max_latency = scenario.network.delay_ms + scenario.network.jitter_ms
        self.apply(self.coord.update_topics(self._topic_image(), 0))
        self.apply(self.coord.load_complete(0))
        self._reschedule_coordinator()
        for a in self.actions:
            self._schedule(a)

    # ---- plumbing ----------------------------------------------------------------------

    def _new_coordinator(self) -> GroupCoordinatorShard:
        coord = self.factory(self.config, new_member_id=self.new_member_id)
        self._handlers = {"hb": coord.heartbeat, "cghb": coord.consumer_group_heartbeat,
                          "join": coord.join_group, "sync": coord.sync_group,
                          "leave": coord.leave_group, "commit": coord.commit_offsets}
        return coord

    def _partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t, n in sorted(self.topics.items()) for p in range(n)]

    def _topic_image(self) -> dict[str, tuple[str, int]]:
        return {t: (topic_id(t), n) for t, n in self.topics.items()}

    def _push(self, t: int, kind: int, payload: Any) -> None:
        self._seq += 1
        if kind <= LOCAL and kind >= TO_COORD:
            if kind == LOCAL:
                self.special += 1
            else:
                self.in_flight += 1
        elif kind >= BUNDLE:
            self.special += 1
        heapq.heappush(self._heap, (t, self._seq, kind, payload))

    def apply(self, result: Result) -> None:
        """Append a result's records to the log, replay them, then route its replies."""
        if result.records:
            metrics = self.metrics
            log = self.log
            replay = self.coord.replay
            group_changed = False
            for record in result.records:
                log.append(record)
                replay(record)
                if type(record) is OffsetCommitRecord:
                    if record.value is not None:
                        metrics.committed((record.topic, record.partition), record.value.offset)
                else:
                    group_changed = True
            if len(log) > LOG_COMPACT_AT:
                # What the broker's snapshots do: the same state from fewer records.
                self.log = self.coord.snapshot_records()
            if group_changed:
                self._observe_generation()
        outstanding = self.outstanding
        for token, response in result.replies:
            if outstanding:
                outstanding.pop(token, None)
            self._reply(token, response)

    def _observe_generation(self) -> None:
        group = self.coord.groups.get(GROUP_ID)
        if group is not None:
            gen = group.generation
        else:
            cgroup = self.coord.consumer_groups.get(GROUP_ID)
            gen = cgroup.epoch if cgroup is not None else self.generation
        if gen != self.generation:
            self.metrics.generation(gen, self.generation)
            self.generation = gen

    # ---- the loop ----------------------------------------------------------------------

    def run(self) -> Metrics:
        """Simulate until the scenario's duration; return the metrics."""
        # A run allocates millions of short-lived records and events over a large live heap;
        # the cyclic collector would rescan that heap again and again (30% of the run time)
        # for cycles that a run does not make. Whatever is left is collected afterwards.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if collecting:
                gc.enable()

    def _run(self) -> Metrics:
        heap = self._heap
        metrics = self.metrics
        pop = heapq.heappop
        dispatch = self._dispatch
        fast = self.sc.fast_forward
        end = self.end
        while heap:
            t = heap[0][0]
            if t > end:
                break
            if fast and t >= self._quiet_check:
                self._maybe_jump(t)
            t, _, kind, payload = pop(heap)
            if t > self.now:
                self.now = t
                metrics.tick(t)
            if TO_COORD <= kind <= LOCAL:
                if kind == LOCAL:
                    self.special -= 1
                else:
                    self.in_flight -= 1
            elif kind >= BUNDLE:
                self.special -= 1
            dispatch(kind, payload, t)
            # Convergence needs every partition held and every running member steady.
            if (metrics.open or not metrics.warm) and not metrics.unowned and not self.unsteady:
                self._check_converged()
        self.now = self.end
        metrics.close(self.end)
        return metrics

    def _dispatch(self, kind: int, payload: Any, t: int) -> None:
        if kind == TO_COORD:
            self._at_coordinator(*payload)
        elif kind == TICK:
            index, inc = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.tick_at == self.now:
                proc.tick_at = None
                self._wake(proc)
        elif kind == TO_MEMBER:
            index, inc, event_kind, rid, response = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.up:
                if proc.cut:
                    self._lost_in_cut(proc, rid)
                else:
                    self._deliver(proc, self._member_event(event_kind, rid, response))
        elif kind == LOCAL:
            index, inc, event = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.up:
                self._deliver(proc, replace(event, now_ms=self.now))
        elif kind == COORD_TIMER:
            if self.coord_timer_at == self.now:
                self.coord_timer_at = None
                if self.coord_up:
                    while True:
                        result = self.coord.expire(self.now)
                        if result is None:
                            break
                        self.apply(result)
                self._reschedule_coordinator()
        elif kind == COMMIT:
            index, inc, seq = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.up and proc.commit_seq == seq:
                self._auto_commit(proc)
                self._arm_commit(proc, t + proc.spec.auto_commit_interval_ms)
        elif kind == BUNDLE:
            index, inc = payload
            proc = self.processes[index]
            if (proc.incarnation == inc and proc.up and proc.bundle is not None
                    and proc.bundle_at == self.now):
                if proc.paused_until >= 0:
                    return                               # rescheduled when it wakes
                bundle, proc.bundle = proc.bundle, None
                self._perform(proc, bundle)
                self._after(proc)
        elif kind == FIND:
            index, inc = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.up:
                self._find(proc)
        elif kind == METADATA:
            index, inc = payload
            proc = self.processes[index]
            if proc.incarnation == inc and proc.up:
                self._deliver(proc, MetadataUpdated(tuple(sorted(self.topics.items())), self.now))
        elif kind == ACTION:
            heapq.heappop(self.scenario_times)
            self._action(payload)
        elif kind == END:
            heapq.heappop(self.scenario_times)
            self._end(payload)

    # ---- members -----------------------------------------------------------------------

    def _deliver(self, proc: Process, event: Any) -> None:
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
                at = proc.next_poll(self.now)
                if at > self.now:
                    proc.bundle = list(actions)
                    proc.bundle_at = at
                    self._push(at, BUNDLE, (proc.index, proc.incarnation))
                else:
                    self._perform(proc, actions)
            else:
                self._perform(proc, actions)
        self._after(proc)

    def _wake(self, proc: Process) -> None:
        """The member's own timer is due: a running consumer is polling, so tell it so."""
        event = Poll(self.now) if proc.running else Tick(self.now)
        self._deliver(proc, event)

    def _after(self, proc: Process) -> None:
        """Re-arm the member's timer and update its steadiness."""
        if not proc.up:
            return
        sm = proc.sm
        deadline = sm.next_deadline()
        if deadline is not None and proc.paused_until < 0:
            deadline = max(deadline, self.now)
            if proc.tick_at is None or deadline < proc.tick_at or proc.tick_at < self.now:
                proc.tick_at = deadline
                self._push(deadline, TICK, (proc.index, proc.incarnation))
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

    def _perform(self, proc: Process, actions: list) -> None:
        for a in actions:
            kind = type(a)
            if kind is SendHeartbeat:
                self._send(proc, "hb", a.request_id, HeartbeatRequest(a.group_id, a.generation, a.member_id,
                                                                        a.group_instance_id))
            elif kind is SendConsumerGroupHeartbeat:
                self._send(proc, "cghb", a.request_id, ConsumerGroupHeartbeatRequest(
                    group_id=a.group_id, member_id=a.member_id, member_epoch=a.member_epoch,
                    instance_id=a.instance_id, rebalance_timeout_ms=a.rebalance_timeout_ms,
                    subscribed_topic_names=a.subscribed_topic_names, server_assignor=a.server_assignor,
                    owned=a.owned, client_id=proc.name, client_host="/lab", api_version=1))
            elif kind is SendJoinGroup:
                self._send(proc, "join", a.request_id, JoinGroupRequest(
                    group_id=a.group_id, member_id=a.member_id, protocol_type=a.protocol_type,
                    protocols=a.protocols, session_timeout_ms=a.session_timeout_ms,
                    rebalance_timeout_ms=a.rebalance_timeout_ms, group_instance_id=a.group_instance_id,
                    client_id=proc.name, client_host="/lab", api_version=9, reason=a.reason or None))
            elif kind is SendSyncGroup:
                self._send(proc, "sync", a.request_id, SyncGroupRequest(
                    a.group_id, a.generation, a.member_id, a.group_instance_id, a.protocol_type,
                    a.protocol, a.assignments))
            elif kind is SendLeaveGroup:
                self._send(proc, "leave", None, LeaveGroupRequest(
                    a.group_id, (LeavingMember(a.member_id, a.group_instance_id, a.reason or None),)))
            elif kind is RunAssigned:
                self._assigned(proc, a.partitions)
            elif kind is RunRevoked or kind is RunLost:
                self._released(proc, a.partitions)
            elif kind is CommitOffsets:
                self._commit(proc, a.partitions, a.generation, a.member_id)
            elif kind is FindCoordinator:
                if not proc.finding:
                    proc.finding = True
                    self._push(self.now + 2 * proc.delay, FIND, (proc.index, proc.incarnation))
            elif kind is RefreshTopicNames:
                names = tuple((topic_id(t), t) for t in sorted(self.topics))
                self._push(self.now + 2 * proc.delay, LOCAL,
                           (proc.index, proc.incarnation, TopicNames(names, self.now)))
            elif kind is Fatal:
                # The application sees the exception and exits; a supervisor restarts it.
                self.metrics.fatal += 1
                back = proc.spec.fatal_restart_ms
                self._schedule(Action(self.now, "crash", proc.index, self.now + back if back else -1,
                                      event=FATAL_EXIT))

    def _assigned(self, proc: Process, parts) -> None:
        proc.settle(self.now)
        committed = self.metrics.last_committed
        holding, positions = proc.holding, proc.positions
        for p in parts:
            holding.add(p)
            positions[p] = float(committed.get(p, 0))
        self.metrics.assign(proc.index, proc.name, parts, committed, self._conflicts)

    def _released(self, proc: Process, parts) -> None:
        proc.settle(self.now)
        for p in parts:
            if p in proc.positions:
                self.metrics.consumed(p, proc.positions.pop(p))
            proc.holding.discard(p)
        self.metrics.release(proc.index, proc.name, parts)

    def _conflicts(self, index: int, p: tuple[str, int]) -> int:
        """Other running holders of ``p`` that the coordinator still counts as members."""
        me = self.processes[index]
        if not me.running or not self._is_member(me):
            return 0
        found = 0
        for other in self.metrics.holders.get(p, ()):
            if other != index:
                proc = self.processes[other]
                if proc.running and self._is_member(proc):
                    found += 1
        return found

    def _is_member(self, proc: Process) -> bool:
        member_id = proc.sm.member_id
        group = self.coord.groups.get(GROUP_ID)
        if group is not None and member_id in group.members:
            return True
        cgroup = self.coord.consumer_groups.get(GROUP_ID)
        return cgroup is not None and member_id in cgroup.members

    def _commit(self, proc: Process, parts, generation: int, member_id: str, only_changed: bool = False) -> None:
        proc.settle(self.now)
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
        self._send(proc, "commit", -self.commit_ids, OffsetCommitRequest(
            GROUP_ID, generation, member_id, tuple(offsets),
            proc.sm.config.group_instance_id, api_version=9 if proc.is_consumer else 8))

    def _auto_commit(self, proc: Process) -> None:
        """enable.auto.commit: what the member has consumed of what it holds, every interval."""
        if proc.running and proc.sm.in_group:
            self._commit(proc, proc.holding, proc.sm.generation, proc.sm.member_id, only_changed=True)

    def _arm_commit(self, proc: Process, at: int) -> None:
        proc.commit_at = at
        self._push(at, COMMIT, (proc.index, proc.incarnation, proc.commit_seq))

    def _find(self, proc: Process) -> None:
        """A FindCoordinator round trip ended: found, or try again after a backoff."""
        if self.coord_up and not proc.cut:
            proc.finding = False
            proc.find_backoff = 100
            self._deliver(proc, CoordinatorFound(self.now))
        else:
            self._push(self.now + proc.find_backoff, FIND, (proc.index, proc.incarnation))
            proc.find_backoff = min(1000, proc.find_backoff * 2)

    # ---- the network and the coordinator ----------------------------------------------

    def _send(self, proc: Process, kind: str, rid: int | None, request: Any) -> None:
        token = (proc.index, proc.incarnation, kind, rid)
        if proc.cut:
            self._lost_in_cut(proc, rid)
            return
        if self._instant and kind != "join" and kind != "sync":
            self._at_coordinator(token, request)
        else:
            self._push(proc.to_coordinator(self.now), TO_COORD, (token, request))

    def _lost_in_cut(self, proc: Process, rid: int | None) -> None:
        if rid is not None and rid > 0:
            self._push(self.now + self.sc.network.request_timeout_ms, LOCAL,
                       (proc.index, proc.incarnation, RequestFailed(rid, self.now)))

    def _at_coordinator(self, token: tuple, request: Any) -> None:
        index, inc, kind, rid = token
        self.requests += 1
        if not self.coord_up:
            if self.coord_loading and kind != "leave":
                self._reply(token, GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            else:
                self._refused(token)
            return
        handler = self._handlers[kind]
        if kind == "join" or kind == "sync":
            self.outstanding[token] = None       # parked until the rebalance answers it
        try:
            result = handler(request, token, self.now)
        except GroupError as exc:
            self.outstanding.pop(token, None)
            self._reply(token, exc)
            self._reschedule_coordinator()
            return
        self.apply(result)
        self._reschedule_coordinator()

    def _refused(self, token: tuple) -> None:
        index, inc, kind, rid = token
        proc = self.processes[index]
        if rid is not None and rid > 0 and proc.incarnation == inc and proc.up:
            self._push(proc.to_member(self.now), LOCAL, (index, inc, RequestFailed(rid, self.now)))

    def _reply(self, token: tuple, response: Any) -> None:
        index, inc, kind, rid = token
        if kind == "leave":
            return
        proc = self.processes[index]
        if proc.incarnation != inc or not proc.up:
            return
        if self._instant:
            if kind == "commit" and not isinstance(response, GroupError) and all(
                    p.error is ErrorCode.NONE for p in response.partitions):
                # A fast-forward's replayed commit went through: the member acts only on
                # errors, and handing it an event now would fire its overdue heartbeat
                # early, off its phase.
                return
            sent = self.now
            self.now = proc.to_member(sent)
            self._deliver(proc, self._member_event(kind, rid, response))
            self.now = sent
            return
        self._push(proc.to_member(self.now), TO_MEMBER, (index, inc, kind, rid, response))

    def _member_event(self, kind: str, rid: int, r: Any) -> Any:
        """A coordinator response (or raised error) as the member state machine's event."""
        now = self.now
        if isinstance(r, GroupError):
            error = r.code
            if kind == "join":
                return JoinGroupAnswered(rid, error, now)
            if kind == "sync":
                return SyncGroupAnswered(rid, error, now)
            if kind == "hb":
                return HeartbeatAnswered(rid, error, now)
            if kind == "cghb":
                return ConsumerGroupHeartbeatAnswered(rid, error, now, error_message=r.message)
            return CommitAnswered(error, now)
        if kind == "hb":
            return HeartbeatAnswered(rid, r.error, now)
        if kind == "cghb":
            return ConsumerGroupHeartbeatAnswered(rid, r.error, now, r.member_id or "", r.member_epoch,
                                                  r.heartbeat_interval_ms, r.assignment, r.error_message or "")
        if kind == "join":
            return JoinGroupAnswered(rid, r.error, now, r.generation_id, r.protocol_name, r.leader,
                                     r.member_id, tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata)
                                                        for m in r.members), r.skip_assignment)
        if kind == "sync":
            return SyncGroupAnswered(rid, r.error, now, r.assignment)
        errors = [p.error for p in r.partitions if p.error is not ErrorCode.NONE]
        return CommitAnswered(errors[0] if errors else ErrorCode.NONE, now)

    def _reschedule_coordinator(self) -> None:
        if not self.coord_up:
            return
        deadline = self.coord.next_deadline()
        if deadline is None:
            return
        deadline = max(deadline, self.now)
        if self.coord_timer_at is None or deadline < self.coord_timer_at or self.coord_timer_at < self.now:
            self.coord_timer_at = deadline
            self._push(deadline, COORD_TIMER, None)

    # ---- scenario actions --------------------------------------------------------------

    def _action(self, a: Action) -> None:
        kind = a.kind
        if kind in _DISRUPTIVE and self.metrics.warm and a.event >= 0:
            if self._grouped(a):
                # Scaling is one disruption however many members come or go.
                if a.event not in self._scaling:
                    self._scaling.add(a.event)
                    self._open_window(replace(a, kind="scale", member=-1))
                    self._end_at(replace(a, kind="scale", member=-1))
            else:
                self._open_window(a)
        if kind == "start":
            self._start(a.member)
        elif kind == "bounce":
            self._close(a.member)
            self._end_at(a)
        elif kind == "close":
            self._close(a.member)
        elif kind == "crash":
            self._crash(a.member)
            if a.until_ms >= 0:
                self._end_at(a)
        elif kind == "gc_pause":
            proc = self.processes.get(a.member)
            if proc is not None and proc.up and proc.paused_until < 0:
                proc.settle(self.now)
                proc.paused_until = a.until_ms
                self.disturbed.add(proc.index)
                self._after(proc)
            self._end_at(a)
        elif kind == "cut":
            proc = self.processes.get(a.member)
            if proc is not None and proc.up:
                self._cut(proc, True)
            self._end_at(a)
        elif kind == "network":
            proc = self.processes.get(a.member)
            if proc is not None:
                proc.delay, proc.jitter = a.delay_ms, a.jitter_ms
            self._end_at(a)
        elif kind == "add_partitions":
            old = self.topics[a.topic]
            self.topics[a.topic] = a.partitions
            self.metrics.add_partitions([(a.topic, p) for p in range(old, a.partitions)])
            if self.coord_up:
                self.apply(self.coord.update_topics(self._topic_image(), self.now))
                self._reschedule_coordinator()
            for proc in self._up():
                if not proc.is_consumer:
                    lag = self.rng.randrange(max(1, proc.spec.metadata_max_age_ms))
                    self._push(self.now + lag, METADATA, (proc.index, proc.incarnation))
        elif kind == "coordinator_restart" or kind == "coordinator_failover":
            self._coordinator_down()
            self._end_at(a)
            if kind == "coordinator_failover":
                self._schedule(replace(a, at_ms=a.until_ms - a.load_ms, kind="coordinator_loading", event=-1))
        elif kind == "coordinator_loading":
            # Another node took the partition over: reachable, but still replaying the log.
            self.coord_loading = True

    def _grouped(self, a: Action) -> bool:
        """Actions of a scale event (starts or closes of several members, one window)."""
        return (a.kind == "start" or a.kind == "close") and a.until_ms >= 0

    def _schedule(self, a: Action) -> None:
        self._push(a.at_ms, ACTION, a)
        heapq.heappush(self.scenario_times, a.at_ms)

    def _end_at(self, a: Action) -> None:
        self._push(a.until_ms, END, a)
        heapq.heappush(self.scenario_times, a.until_ms)

    def _end(self, a: Action) -> None:
        self.metrics.disruption_over(a.event, a.member)
        kind = a.kind
        if kind in ("bounce", "crash"):
            self._start(a.member)
        elif kind == "gc_pause":
            proc = self.processes.get(a.member)
            if proc is not None and proc.up and proc.paused_until >= 0:
                self._resume(proc)
        elif kind == "cut":
            proc = self.processes.get(a.member)
            if proc is not None and proc.cut:
                self._cut(proc, False)
        elif kind == "network":
            proc = self.processes.get(a.member)
            if proc is not None:
                proc.delay, proc.jitter = self.sc.network.delay_ms, self.sc.network.jitter_ms
        elif kind == "coordinator_restart" or kind == "coordinator_failover":
            self.coord_loading = False
            self._coordinator_up()

    def _cut(self, proc: Process, on: bool) -> None:
        """Cut the member's link (it can neither fetch nor talk to the coordinator), or heal it."""
        proc.settle(self.now)
        proc.cut = on
        if on:
            self.disturbed.add(proc.index)
        else:
            self.disturbed.discard(proc.index)
            self._zombie_check(proc)
            self._after(proc)

    def _open_window(self, a: Action) -> None:
        held: dict[str, int] = {}
        for proc in self.processes.values():
            if proc.holding:
                held[proc.name] = len(proc.holding)
        target = self.processes.get(a.member)
        target_held = frozenset(target.holding) if target is not None else frozenset()
        timed = a.until_ms >= 0
        self.metrics.open_window(a.event, a.kind, a.member, a.until_ms, target_held, held, self.generation, timed)

    def _up(self) -> list[Process]:
        return [p for _, p in sorted(self.processes.items()) if p.up]

    def _start(self, index: int) -> None:
        proc = self.processes.get(index)
        if proc is None:
            rng = random.Random(f"member:{self.sc.seed}:{index}")
            proc = self.processes[index] = Process(index, self.sc.members, self.sc.network, rng)
        elif proc.up:
            return
        proc.start(self.now)
        self.unsteady.add(index)
        # A consumer looks its topics up before it subscribes, and finds its coordinator.
        if not proc.is_consumer:
            self._deliver(proc, MetadataUpdated(tuple(sorted(self.topics.items())), self.now))
        self._deliver(proc, Subscribe(tuple(sorted(self.topics)), self.now))
        if not proc.finding:
            proc.finding = True
            self._push(self.now + 2 * proc.delay, FIND, (index, proc.incarnation))
        self._arm_commit(proc, self.now + proc.spec.auto_commit_interval_ms)

    def _close(self, index: int) -> None:
        """A clean shutdown: the member commits, revokes and leaves (a static one stays)."""
        proc = self.processes.get(index)
        if proc is None or not proc.up:
            return
        if proc.paused_until >= 0:
            self._resume(proc)
        if proc.bundle is not None:
            bundle, proc.bundle = proc.bundle, None
            self._perform(proc, bundle)
        self.member_events += 1
        self._perform(proc, proc.sm.handle(Close(self.now)))
        self._gone(proc)

    def _crash(self, index: int) -> None:
        """The process dies: no leave, no callbacks; what it held is simply not consumed."""
        proc = self.processes.get(index)
        if proc is None or not proc.up:
            return
        proc.settle(self.now)
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

    def _resume(self, proc: Process) -> None:
        """A frozen process runs again: its timers see how long it was gone first."""
        proc.paused_until = -1
        proc.since = self.now
        self.disturbed.discard(proc.index)
        waiting, proc.deferred = proc.deferred, []
        self._deliver(proc, Tick(self.now))
        for event in waiting:
            if proc.up:
                self._deliver(proc, replace(event, now_ms=self.now))
        if proc.up and proc.bundle is not None:
            proc.bundle_at = proc.next_poll(self.now)
            self._push(proc.bundle_at, BUNDLE, (proc.index, proc.incarnation))
        self._zombie_check(proc)
        self._after(proc)

    def _zombie_check(self, proc: Process) -> None:
        """A process that comes back holding partitions may now consume beside their new owner."""
        for p in sorted(proc.holding):
            self.metrics.double_ownership += self._conflicts(proc.index, p)

    def _coordinator_down(self) -> None:
        self.coord_up = False
        self.coord_timer_at = None
        # Connections drop: every request parked at the coordinator fails.
        for token in list(self.outstanding):
            self._refused(token)
        self.outstanding.clear()

    def _coordinator_up(self) -> None:
        """A new coordinator replays the group-metadata log, as after a broker restart."""
        self.coord = self._new_coordinator()
        for record in self.log:
            self.coord.replay(record)
        self.coord_up = True
        self.apply(self.coord.update_topics(self._topic_image(), self.now))
        self.apply(self.coord.load_complete(self.now))
        self._reschedule_coordinator()

    # ---- convergence and fast-forward ---------------------------------------------------

    def _coordinator_stable(self) -> bool:
        if not self.coord_up:
            return False
        group = self.coord.groups.get(GROUP_ID)
        if group is not None:
            return group.state.value == "Stable"
        cgroup = self.coord.consumer_groups.get(GROUP_ID)
        return cgroup is not None and cgroup.state().value == "Stable"

    def _converged_now(self) -> bool:
        m = self.metrics
        return (not m.unowned and not m.shared and not self.unsteady and not self.disturbed
                and any(p.up for p in self.processes.values()) and self._coordinator_stable())

    def _check_converged(self) -> None:
        m = self.metrics
        if m.unowned or self.unsteady or self.disturbed:
            return
        if m.warm and not any(w.ended for w in m.open):
            return
        if self._converged_now():
            live = {p.name: None for p in self._up()}
            m.converged(live, sum(self.topics.values()))
            self._quiet_check = self.now

    def _maybe_jump(self, t: int) -> None:
        """Skip a quiet stretch; see the module comment."""
        period = self._period
        self._quiet_check = t + period // 4
        if (self.in_flight or self.special or self.unsteady or not self.metrics.warm
                or not self._coordinator_stable()):
            return
        if any(p.cut for p in self.processes.values()):
            return                        # its requests time out at their own pace
        # A frozen process does nothing until it wakes (a scheduled action); the running
        # ones must not be sharing a partition.
        if self.metrics.shared:
            frozen = {p.index for p in self.processes.values() if p.up and p.paused_until >= 0}
            for holders in self.metrics.holders.values():
                if len(holders) > 1 and sum(1 for h in holders if h not in frozen) > 1:
                    return
        upcoming = self.scenario_times[0] if self.scenario_times else self.end
        # A member with no running process (crashed, or a static one away) is the one
        # thing the coordinator acts on by itself: land before its session runs out.
        orphan = self._orphan_deadline()
        if orphan is not None:
            upcoming = min(upcoming, orphan)
        # Land just before the next action; every member's last heartbeat and auto-commit
        # before it are replayed at their own phase, so the action finds what a full
        # simulation would have left.
        land = min(upcoming, self.end) - 2 * self._max_latency - 1
        if land - t < self._worth_jumping:
            return                        # the landing would cost more than the stretch
        landings = []
        for proc in self._up():
            if not proc.running:
                continue
            due = proc.sm.next_deadline()
            beat = self._heartbeat_period(proc)
            if due is None or beat <= 0:
                return
            last = land - 2 * self._max_latency
            landings.append((due + ((last - due) // beat) * beat, 0, proc.index))
            every = proc.spec.auto_commit_interval_ms
            landings.append((proc.commit_at + ((last - proc.commit_at) // every) * every, 1, proc.index))
        landings.sort()
        self.jumps += 1
        self.jumped_ms += land - t
        self._instant = True
        try:
            for at, what, index in landings:
                proc = self.processes[index]
                self.now = at
                if what == 0:
                    proc.tick_at = None
                    self._deliver(proc, Poll(at))
                else:
                    self._auto_commit(proc)
                    proc.commit_seq += 1
                    self._arm_commit(proc, at + proc.spec.auto_commit_interval_ms)
        finally:
            self._instant = False
        self.now = land
        self.metrics.tick(land)
        # Timer events queued before the landing are stale now: arm afresh.
        self.coord_timer_at = None
        self._reschedule_coordinator()
        self._quiet_check = land

    def _orphan_deadline(self) -> int | None:
        """The earliest session deadline of a group member that no running process is."""
        running = {p.sm.member_id for p in self.processes.values() if p.running}
        timers = self.coord.shard.timers
        deadlines = []
        group = self.coord.groups.get(GROUP_ID)
        if group is not None:
            deadlines += [timers.deadline(classic_session_key(GROUP_ID, m)) for m in group.members if m not in running]
        cgroup = self.coord.consumer_groups.get(GROUP_ID)
        if cgroup is not None:
            deadlines += [timers.deadline(consumer_session_key(GROUP_ID, m)) for m in cgroup.members if m not in running]
        deadlines = [d for d in deadlines if d is not None]
        return min(deadlines) if deadlines else None

    def _heartbeat_period(self, proc: Process) -> int:
        interval = proc.sm.heartbeat_interval_ms if proc.is_consumer else proc.spec.heartbeat_interval_ms
        return interval + 2 * proc.delay
