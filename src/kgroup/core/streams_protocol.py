"""StreamsGroupHeartbeat: the streams group protocol's one request, and its timers (KIP-1071).

How this works (numbered steps in `_heartbeat`), as Kafka 4.4's GroupMetadataManager does it:

1. Validate the request (`validate`: Kafka's GroupCoordinatorService and KafkaApis checks).
2. Find or create the group (only a join, epoch 0, creates one) and the member: a dynamic
   member by its id (its epoch checked: ahead is fenced; behind is fenced unless it is the
   previous epoch and it holds nothing beyond its assignment), a static member by its
   instance id (a rejoin with a new member id takes the place, and the tasks, of the one that
   left with epoch -2). Fold the request into the member's metadata; a new member, or a new
   process, rack, client tags or topology epoch, moves the group epoch.
3. The topology: the first one the group sees is kept; one with a lower epoch is stale
   (STALE_TOPOLOGY); another one at the same epoch is refused (no topology updates in 4.4).
4. Configure it against the topics (streams_topology.configure, cached per topology and
   topics' metadata): a change of the topics' metadata, of whether the topology is ready, of
   the assignment configs, or a warm-up that caught up moves the group epoch (the first
   epoch of a group is 2, as Kafka's).
5. When the group epoch is ahead of the target, run the task assignor (active, standby and
   warm-up tasks) — unless the group's initial rebalance delay is running, when the member
   is told ASSIGNMENT_DELAYED and gets nothing yet.
6. Move the member one step towards its target (streams_reconcile.reconcile).
7. Timers: the session always, the rebalance timeout while the member owes a revocation.
8. Answer: epoch, intervals, the statuses (missing topics, internal topics being created,
   stale topology, shutdown requested, assignment delayed), the tasks when they changed or
   the member joined, the endpoints of the others when the member's view is old; and, for
   the broker, the internal topics to create.

Most heartbeats of a settled group change nothing but their member's session: `steady`
answers those without steps 2-8, exactly as the steps would (a twin test holds it to them).

Everything durable comes out as records (streams_records.py) that replay
(modern_group.ModernGroup.apply) applies; runtime changes (timers, the configured topology
cache, reported task offsets, the shutdown request) are staged on the ResultBuilder and
happen only when the whole request succeeded.

On the modern base (modern_protocol.py): sessions, removing members (a leave, a session or
revocation timeout, the control API's expiry), a rebalance on demand, deletion and reloads
are the base's, and every Result carries an event journal, so streams groups get the group
events the other modern kinds get from their records. The heartbeat's steps are this
module's own: the topology, its configuration against the topics and the initial rebalance
delay come before the epoch and the target, in an order the base's heartbeat does not have.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgroup.assignors.streams_spec import TaskMember, Tasks, TaskSubtopology
from kgroup.assignors.streams_sticky import StickyTaskAssignor
from kgroup.assignors.streams_warmups import caught_up_warmups
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.modern_protocol import ModernProtocol
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.streams_configs import StreamsConfigs
from kgroup.core.streams_group import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    TASK_ASSIGNOR,
    StreamsGroup,
    StreamsGroupMember,
    TaskOffsets,
)
from kgroup.core.streams_messages import (
    DescribedStreamsGroup,
    DescribedStreamsMember,
    DescribedSubtopology,
    DescribedTopicInfo,
    EndpointPartitions,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    TopologyDescriptionUpdate,
)
from kgroup.core.streams_reconcile import Owned, TaskHolders, reconcile
from kgroup.core.streams_records import (
    NEW_STREAMS_MEMBER,
    NO_TASKS,
    StreamsCurrentValue,
    StreamsMemberState,
    StreamsMemberValue,
    StreamsTopologyRecord,
    TaskId,
    TaskTuple,
    task_ids,
)
from kgroup.core.streams_topology import (
    ConfiguredTopology,
    InvalidTopology,
    StreamsTopology,
    TopologyStatus,
    check_request_topology,
    check_topic_names,
    configure,
)
from kgroup.core.timers import (
    TimerKind,
    TimerOp,
    streams_initial_delay_key,
    streams_revoke_key,
    streams_session_key,
)

JOIN_EPOCH = 0
# Kafka 4.4's answer to StreamsGroupTopologyDescriptionUpdate without a description plug-in.
NO_DESCRIPTION_PLUGIN = "The broker has no streams group topology description plugin configured."
ASSIGNOR = TASK_ASSIGNOR


def _invalid(why: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_REQUEST, why)


@dataclass(frozen=True, slots=True)
class _Member:
    """Step 2: the member as the request leaves it (not yet replayed)."""

    member_id: str
    current: StreamsCurrentValue
    old_meta: StreamsMemberValue | None          # None: new to the group
    meta: StreamsMemberValue
    replaced: StreamsGroupMember | None          # a static member whose place it takes


class StreamsProtocol(ModernProtocol):
    GROUP = StreamsGroup
    API = "StreamsGroupHeartbeat"
    JOIN_EPOCH = JOIN_EPOCH
    LEAVE_EPOCHS = (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    SESSION_TIMER = TimerKind.STREAMS_SESSION
    session_key = staticmethod(streams_session_key)

    def __init__(self, shard: ShardState) -> None:
        super().__init__(shard, shard.streams_groups)
        self.configs = StreamsConfigs(shard)
        self.assignor = StickyTaskAssignor()

    # ======================================================================================
    # StreamsGroupHeartbeat
    # ======================================================================================

    def heartbeat(self, req: StreamsGroupHeartbeatRequest, reply: ReplyTo, now_ms: int) -> Result:
        """One StreamsGroupHeartbeat for a streams group, or a group that does not exist yet."""
        self.validate(req)                                                              # 1
        group = self.groups.get(req.group_id)
        if group is not None and req.member_epoch > JOIN_EPOCH:
            answered = self.steady(group, req, reply, now_ms)
            if answered is not None:
                return answered
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        if req.member_epoch in self.LEAVE_EPOCHS:
            self._leave(group, req, reply, now_ms, out)
        else:
            self._heartbeat(group, req, reply, now_ms, out)
        if out.records:
            # Named once its records are known (a steady heartbeat names no group); the
            # group is as it was, as only replay changes it.
            out.changed(req.group_id, self.API)
        return out.build()

    def steady(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest, reply: ReplyTo,
               now_ms: int) -> Result | None:
        """A settled member's heartbeat (`ModernProtocol.steady`): known, at its own epoch,
        which is the group's and its target's, Stable with nothing to revoke, and nothing in
        the request its metadata lacks (no topology, tasks, offsets, process, endpoint or
        client tags; its own instance, rack, client id and host, rebalance timeout at most),
        its endpoint view current, the group's topology configured as the group last saw
        it with nothing missing, its assignment configs unchanged and no shutdown asked for.
        Then steps 2-7 change nothing (no record, no epoch, reconcile keeps the member, no
        revocation timer) but the session, and the answer has no status, tasks or
        endpoints. tests/unit/core/test_streams_steady_heartbeat.py holds it to the steps'
        answers."""
        member = group.members.get(req.member_id)
        if member is None:
            return None
        meta, current, epoch, topology = member.meta, member.current, req.member_epoch, group.topology
        if (epoch != current.member_epoch or epoch != group.epoch or epoch != group.target_epoch
                or current.state is not StreamsMemberState.STABLE or topology is None
                or meta.topology_epoch != topology.epoch or req.topology is not None
                or req.active_tasks is not None or req.task_offsets is not None
                or req.task_end_offsets is not None or req.shutdown_application
                or group.shutdown_requested_by is not None or req.client_tags is not None
                or req.instance_id not in (None, meta.instance_id) or req.rack_id not in (None, meta.rack_id)
                or req.client_id not in ("", meta.client_id) or req.client_host not in ("", meta.client_host)
                or req.rebalance_timeout_ms not in (-1, meta.rebalance_timeout_ms)
                or req.process_id not in (None, meta.process_id)
                or req.user_endpoint not in (None, meta.user_endpoint)
                or req.endpoint_information_epoch != group.endpoint_epoch):
            return None
        gid, mid = group.group_id, member.member_id
        if req.instance_id is not None and group.static_member(req.instance_id) is not member:
            return None
        subscribed = self._subscribed(group, topology)
        configured = group.configured
        if (subscribed != group.subscribed or configured is None or group.configured_for != (topology, subscribed)
                or configured.status is not None
                or (topology.epoch if configured.ready else -1) != group.validated_topology_epoch
                or streams_revoke_key(gid, mid) in self.timers):
            return None
        configs = self.configs
        if configs.assignment_configs(gid) != group.assignment_configs:
            return None
        response = StreamsGroupHeartbeatResponse(
            ErrorCode.NONE, None, mid, epoch, configs.heartbeat_interval(gid), configs.task_offset_interval(gid),
            configs.acceptable_recovery_lag(gid), (), None, None, None, group.endpoint_epoch, None, ())
        # Last, as the steps arm it at build(): nothing above changed anything.
        self._session(gid, mid, now_ms + configs.session_timeout(gid))
        return Result((), ((reply, response),)) if reply is not None else EMPTY_RESULT

    def validate(self, req: StreamsGroupHeartbeatRequest) -> None:
        """Raise unless the request is well formed (Kafka's checks before the coordinator)."""
        if req.topology is not None:
            for s in req.topology.subtopologies:
                if s.source_topic_regex:
                    raise _invalid("Regular expressions for source topics are not supported yet.")
            try:
                check_topic_names(req.topology)      # before anything else, at any epoch (as Kafka)
            except InvalidTopology as e:
                raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(e)) from None
        if not req.member_id:
            raise _invalid("MemberId can't be empty.")
        if not req.group_id:
            raise _invalid("GroupId can't be empty.")     # INVALID_REQUEST, as Kafka 4.4 answers
        if req.instance_id is not None and not req.instance_id:
            raise _invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise _invalid("RackId can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            for tasks, kind in ((req.active_tasks, "ActiveTasks"), (req.standby_tasks, "StandbyTasks"),
                                (req.warmup_tasks, "WarmupTasks")):
                if tasks is None or tasks:                # Kafka refuses a null list too
                    raise _invalid(f"{kind} must be empty when (re-)joining.")
            if req.topology is None:
                raise _invalid("Topology must be non-null when (re-)joining.")
            try:
                check_request_topology(req.topology)
            except InvalidTopology as e:
                raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(e)) from None
        elif req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
        elif req.member_epoch < STATIC_LEAVE_EPOCH:
            raise _invalid(f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
        if (req.active_tasks is None) != (req.standby_tasks is None) or \
                (req.active_tasks is None) != (req.warmup_tasks is None):
            raise _invalid("If one task-type is non-null, all must be non-null.")
        if req.member_epoch != JOIN_EPOCH and req.topology is not None:
            raise _invalid("Topology can only be provided when (re-)joining.")

    def _heartbeat(self, group: StreamsGroup | None, req: StreamsGroupHeartbeatRequest, reply: ReplyTo,
                   now_ms: int, out: ResultBuilder) -> None:
        is_new_group = group is None
        if group is None:
            if req.member_epoch != JOIN_EPOCH:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found.")
            group = StreamsGroup(req.group_id)
        gid = group.group_id
        status: list[tuple[int, str]] = []
        was_empty = not group.members
        # 2. The member, and whether it moves the group epoch.
        member = self._member(group, req, out)
        bump = member.old_meta is None or _epoch_relevant(member.old_meta) != _epoch_relevant(member.meta)
        # 3. The topology.
        topology = self._topology(group, req, member.member_id, out)
        if member.meta.topology_epoch < topology.epoch:
            status.append((TopologyStatus.STALE_TOPOLOGY,
                           f"The member's topology epoch {member.meta.topology_epoch} is behind the group's "
                           f"topology epoch {topology.epoch}."))
        # 4. Configure it against the topics; what else moves the group epoch.
        subscribed = self._subscribed(group, topology)
        configured = self._configured(group, topology, subscribed, out)
        if subscribed != group.subscribed or group.topology is None:
            bump = True
        validated = topology.epoch if configured.ready else -1
        if configured.ready:
            for tasks in (req.active_tasks, req.standby_tasks, req.warmup_tasks):
                _check_tasks(configured, tasks)
        if validated != group.validated_topology_epoch:
            bump = True
        offsets = self._offsets(group, member.member_id, req, out)
        configs = self.configs.assignment_configs(gid)
        if not bump and configs != group.assignment_configs:
            bump = True
        if not bump and offsets is not None and self._warmup_caught_up(group, member, offsets, configs):
            bump = True
        epoch = group.epoch
        if bump or is_new_group:
            epoch = 2 if group.epoch == 0 else group.epoch + 1
            out.record(self.records.epoch(gid, epoch, subscribed, validated, configs))
        # 5. The target assignment.
        delayed = self._initial_delay(group, was_empty, now_ms, out)
        targets, target_epoch = self._target(group, member, configured, epoch, configs, delayed, offsets, out)
        if epoch > group.target_epoch and delayed:
            status.append((TopologyStatus.ASSIGNMENT_DELAYED,
                           "Assignment delayed due to the configured initial rebalance delay."))
        # 6. One reconciliation step.
        nxt = self._reconcile(group, member, req, targets.get(member.member_id, NO_TASKS), target_epoch, out)
        # 7. Timers, and a shutdown asked for.
        self._arm(group, member, nxt, now_ms, out)
        if req.shutdown_application:
            out.then(setattr, group, "shutdown_requested_by", member.member_id)
        # 8. The answer.
        if configured.status is not None:
            status.append((int(configured.status[0]), configured.status[1]))
        shutdown_by = member.member_id if req.shutdown_application else group.shutdown_requested_by
        if shutdown_by is not None:
            status.append((TopologyStatus.SHUTDOWN_APPLICATION,
                           f"Streams group member {shutdown_by} encountered a fatal error and requested a "
                           f"shutdown for the entire application."))
        out.reply(reply, self._answer(group, req, member, nxt, tuple(status), configured, is_new_group, out))

    # ---- step 2: the member ---------------------------------------------------------------

    def _member(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest, out: ResultBuilder) -> _Member:
        member, replaced = self._member_for(group, req)
        if member is None and replaced is None and req.member_id not in group.members \
                and len(group.members) >= self.config.streams_max_size:
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"The streams group has reached its maximum "
                                                                f"capacity of {self.config.streams_max_size} members.")
        old_meta = member.meta if member is not None else None
        meta = _merge(old_meta if old_meta is not None else (replaced.meta if replaced else None), req)
        gid = group.group_id
        if replaced is not None:
            # The rejoining static member takes the place of the one that left: its tasks
            # and target move to the new member id, at epoch 0.
            current = StreamsCurrentValue(0, 0, replaced.current.state, replaced.current.active,
                                          replaced.current.standby, replaced.current.warmup,
                                          replaced.current.pending_active, replaced.current.pending_standby,
                                          replaced.current.pending_warmup)
            self._remove_records(group, replaced.member_id, out)
            out.record(self.records.member(gid, req.member_id, meta))
            out.record(self.records.current(gid, req.member_id, current))
            target = group.target.get(replaced.member_id)
            if target is not None:
                out.record(self.records.target(gid, req.member_id, target))
            return _Member(req.member_id, current, replaced.meta, meta, replaced)
        if meta != old_meta:
            out.record(self.records.member(gid, req.member_id, meta))
        current = member.current if member is not None else NEW_STREAMS_MEMBER
        return _Member(req.member_id, current, old_meta, meta, None)

    def _member_for(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest
                    ) -> tuple[StreamsGroupMember | None, StreamsGroupMember | None]:
        """(the member, or None if new; a static member it replaces, or None)."""
        if req.member_epoch != JOIN_EPOCH:
            member = _known_member(group, req)
            _check_epoch(member, req)
            return member, None
        if req.instance_id is None:
            return group.members.get(req.member_id), None
        static = group.static_member(req.instance_id)
        if static is None:
            return group.members.get(req.member_id), None
        if static.epoch != STATIC_LEAVE_EPOCH:
            # Even under its own member id (Kafka 4.4's throwIfInstanceIdIsUnreleased): a
            # static member rejoins only once it has left for a while (-2).
            raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                             f"Static member {req.member_id} with instance id {req.instance_id} cannot join the "
                             f"group because the instance id is owned by {static.member_id} member.")
        if static.member_id == req.member_id:
            return static, None
        return None, static

    # ---- steps 3 and 4: the topology and its configuration --------------------------------

    def _topology(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest, member_id: str,
                  out: ResultBuilder) -> StreamsTopology:
        sent, kept = req.topology, group.topology
        if sent is None:
            if kept is None:
                raise _invalid("The topology is null and the group topology is also null.")
            return kept
        if kept is None:
            out.record(StreamsTopologyRecord(group.group_id, sent))
            return sent
        if kept.epoch > sent.epoch:
            return kept
        if kept != sent:
            raise _invalid("Topology updates are not supported yet.")
        return kept

    def _subscribed(self, group: StreamsGroup, topology: StreamsTopology) -> tuple[tuple[str, str, int], ...]:
        """The topology's topics that exist, with their ids and partition counts. Worked out
        again only for another topology or another topics map (the broker replaces the map
        whole when a topic changes): most heartbeats of a group ask the same. The cache is
        derived from inputs alone, so setting it changes no state even if the request fails."""
        topics = self.shard.topics
        cached = group.subscribed_for
        if cached and cached[0] is topology and cached[1] is topics:
            return cached[2]
        subscribed = tuple(sorted((n, *topics[n]) for n in topology.required_topics() if n in topics))
        group.subscribed_for = (topology, topics, subscribed)
        return subscribed

    def _configured(self, group: StreamsGroup, topology: StreamsTopology, subscribed: tuple,
                    out: ResultBuilder) -> ConfiguredTopology:
        key = (topology, subscribed)
        if group.configured is not None and group.configured_for == key:
            return group.configured
        topics = self.shard.topics
        try:
            configured = configure(topology, lambda name: topics[name][1] if name in topics else None)
        except InvalidTopology as e:
            raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(e)) from None
        out.then(_cache_configured, group, configured, key)
        return configured

    def _offsets(self, group: StreamsGroup, member_id: str, req: StreamsGroupHeartbeatRequest,
                 out: ResultBuilder) -> TaskOffsets | None:
        """The member's task offsets with this report folded in (None: it reported nothing)."""
        if req.task_offsets is None and req.task_end_offsets is None:
            return None
        old = group.task_offsets.get(member_id, TaskOffsets())
        new = TaskOffsets(
            _by_task(req.task_offsets) if req.task_offsets is not None else dict(old.offsets),
            _by_task(req.task_end_offsets) if req.task_end_offsets is not None else dict(old.end_offsets))
        out.then(group.task_offsets.__setitem__, member_id, new)
        return new

    def _warmup_caught_up(self, group: StreamsGroup, member: _Member, offsets: TaskOffsets,
                          configs: tuple[tuple[str, str], ...]) -> bool:
        """Whether a warm-up of the target has caught up with this report (a new assignment
        then moves the task)."""
        if not any(t.warmup for t in group.target.values()):
            return False
        members = self._task_members(group, _view(group, member), {member.member_id: offsets})
        targets = {m: _tasks(t) for m, t in group.target.items()}
        return bool(caught_up_warmups(members, targets, self.configs.for_assignor(configs)))

    # ---- step 5: the target assignment -----------------------------------------------------

    def _initial_delay(self, group: StreamsGroup, was_empty: bool, now_ms: int, out: ResultBuilder) -> bool:
        """Whether the initial rebalance delay holds the assignment back (arming it for a
        group that was empty)."""
        key = streams_initial_delay_key(group.group_id)
        if key in self.timers:
            return True
        if was_empty:
            delay = self.configs.initial_rebalance_delay(group.group_id)
            if delay > 0:
                out.then(self.timers.schedule, key, now_ms + delay,
                         TimerOp(TimerKind.STREAMS_INITIAL_DELAY, group.group_id))
                return True
        return False

    def _target(self, group: StreamsGroup, member: _Member, configured: ConfiguredTopology, epoch: int,
                configs: tuple[tuple[str, str], ...], delayed: bool, offsets: TaskOffsets | None,
                out: ResultBuilder) -> tuple[dict[str, TaskTuple], int]:
        targets = dict(group.target)
        if member.replaced is not None and member.replaced.member_id in targets:
            targets[member.member_id] = targets.pop(member.replaced.member_id)
        if epoch <= group.target_epoch:
            return targets, group.target_epoch
        if delayed:
            # Kafka: during the initial delay the member reconciles to nothing, at the
            # target epoch it had (at least 1).
            return {member.member_id: NO_TASKS}, max(1, group.target_epoch)
        members = _view(group, member)
        # What this request reports counts already (Kafka updates a member's task offsets
        # before it computes the target).
        reported = {member.member_id: offsets} if offsets is not None else None
        targets = self.assign(group, members, configured, targets, configs, out, reported)
        out.record(self.records.target_epoch(group.group_id, epoch))
        return targets, epoch

    def assign(self, group: StreamsGroup, members: dict[str, tuple[StreamsMemberValue, StreamsCurrentValue]],
               configured: ConfiguredTopology, targets: dict[str, TaskTuple],
               configs: tuple[tuple[str, str], ...], out: ResultBuilder,
               offsets: dict[str, TaskOffsets] | None = None) -> dict[str, TaskTuple]:
        """Run the task assignor over `members` (all of them: a static member replaced is not
        among them); record the targets that change."""
        if configured.ready:
            subtopologies = [TaskSubtopology(s.subtopology_id, s.tasks, s.stateful)
                             for s in configured.subtopologies or ()]
            result = self.assignor.assign(subtopologies, self._task_members(group, members, offsets),
                                          self.configs.for_assignor(configs))
        else:
            result = {}
        new: dict[str, TaskTuple] = {}
        for mid in sorted(members):
            tasks = result.get(mid, Tasks())
            value = TaskTuple(task_ids(tasks.active), task_ids(tasks.standby), task_ids(tasks.warmup))
            new[mid] = value
            if targets.get(mid) != value:
                out.record(self.records.target(group.group_id, mid, value))
        return new

    def _task_members(self, group: StreamsGroup, view: dict[str, tuple[StreamsMemberValue, StreamsCurrentValue]],
                      offsets: dict[str, TaskOffsets] | None = None) -> dict[str, TaskMember]:
        """The assignor's view of the members in `view`: process, what each holds, reported
        offsets (`offsets` first, then what the group keeps)."""
        out = {}
        for mid, (meta, current) in view.items():
            reported = (offsets or {}).get(mid) or group.task_offsets.get(mid) or TaskOffsets()
            assigned = current.assigned()
            out[mid] = TaskMember(meta.process_id, Tasks(frozenset(assigned.active), frozenset(assigned.standby),
                                                          frozenset(assigned.warmup)),
                                  reported.offsets, reported.end_offsets)
        return out

    # ---- step 6: reconciliation ------------------------------------------------------------

    def _reconcile(self, group: StreamsGroup, member: _Member, req: StreamsGroupHeartbeatRequest,
                   target: TaskTuple, target_epoch: int, out: ResultBuilder) -> StreamsCurrentValue:
        owned = None
        if req.active_tasks is not None:
            owned = Owned(frozenset(req.active_tasks), frozenset(req.standby_tasks or ()),
                          frozenset(req.warmup_tasks or ()))
        holders = group.holders
        if member.old_meta is not None and member.replaced is None \
                and member.old_meta.process_id != member.meta.process_id:
            holders = _moved(group, member)
        nxt = reconcile(member.meta.process_id, member.current, target, target_epoch, holders, owned)
        if nxt != member.current or member.member_id not in group.members or member.replaced is not None:
            out.record(self.records.current(group.group_id, member.member_id, nxt))
        return nxt

    # ---- step 7: timers --------------------------------------------------------------------

    def _arm(self, group: StreamsGroup, member: _Member, nxt: StreamsCurrentValue, now_ms: int,
             out: ResultBuilder) -> None:
        gid, mid = group.group_id, member.member_id
        self.arm_session(gid, mid, now_ms + self.configs.session_timeout(gid), out)
        revoke = streams_revoke_key(gid, mid)
        if nxt.state is StreamsMemberState.UNREVOKED_TASKS:
            before = member.current
            if before.state is not StreamsMemberState.UNREVOKED_TASKS or before.pending() != nxt.pending():
                out.then(self.timers.schedule, revoke, now_ms + member.meta.rebalance_timeout_ms,
                         TimerOp(TimerKind.STREAMS_REVOKE, gid, mid, generation=nxt.member_epoch))
        elif revoke in self.timers:
            out.then(self.timers.cancel, revoke)

    # ---- step 8: the answer ----------------------------------------------------------------

    def _answer(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest, member: _Member,
                nxt: StreamsCurrentValue, status: tuple[tuple[int, str], ...], configured: ConfiguredTopology,
                is_new_group: bool, out: ResultBuilder) -> StreamsGroupHeartbeatResponse:
        gid = group.group_id
        assigned = nxt.assigned()
        send_tasks = req.member_epoch == JOIN_EPOCH or nxt.active != member.current.active \
            or assigned.standby != member.current.standby or assigned.warmup != member.current.warmup
        endpoint_epoch = group.endpoint_epoch
        if send_tasks and member.meta.user_endpoint is not None or (
                member.old_meta is not None and member.old_meta.user_endpoint != member.meta.user_endpoint):
            endpoint_epoch += 1
            out.then(setattr, group, "endpoint_epoch", endpoint_epoch)
        endpoints = None
        if endpoint_epoch != req.endpoint_information_epoch:
            endpoints = self._endpoints(group, member, nxt, configured)
        to_create = configured.to_create if configured.status is not None and \
            configured.status[0] is TopologyStatus.MISSING_INTERNAL_TOPICS else ()
        return StreamsGroupHeartbeatResponse(
            ErrorCode.NONE, None, member.member_id, nxt.member_epoch, self.configs.heartbeat_interval(gid),
            self.configs.task_offset_interval(gid), self.configs.acceptable_recovery_lag(gid), status,
            assigned.active if send_tasks else None, assigned.standby if send_tasks else None,
            assigned.warmup if send_tasks else None, 0 if is_new_group else endpoint_epoch, endpoints, to_create)

    def _endpoints(self, group: StreamsGroup, member: _Member, nxt: StreamsCurrentValue,
                   configured: ConfiguredTopology) -> tuple[EndpointPartitions, ...]:
        """IQ: each member's endpoint with the source partitions of its tasks (this member's
        as it is after this heartbeat)."""
        sources = {s.subtopology_id: (*s.source_topics, *(t.name for t in s.repartition_source_topics))
                   for s in configured.subtopologies or ()}
        topics = self.shard.topics

        def partitions(tasks: Iterable[TaskId]) -> tuple[tuple[str, tuple[int, ...]], ...]:
            by_topic: dict[str, set[int]] = {}
            for s, p in tasks:
                for topic in sources.get(s, ()):
                    if topic in topics and p < topics[topic][1]:
                        by_topic.setdefault(topic, set()).add(p)
            return tuple((t, tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))

        views = {m.member_id: (m.meta, m.current) for m in group.members.values()}
        views[member.member_id] = (member.meta, nxt)
        out = []
        for mid in sorted(views):
            meta, current = views[mid]
            if meta.user_endpoint is None:
                continue
            assigned = current.assigned()
            out.append(EndpointPartitions(meta.user_endpoint[0], meta.user_endpoint[1], partitions(assigned.active),
                                          partitions((*assigned.standby, *assigned.warmup))))
        return tuple(out)

    # ======================================================================================
    # Leaving, fencing, timers
    # ======================================================================================

    def _leave(self, group: StreamsGroup | None, req: StreamsGroupHeartbeatRequest, reply: ReplyTo, now_ms: int,
               out: ResultBuilder) -> None:
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found.")
        member = _known_member(group, req)
        if req.shutdown_application:
            out.then(setattr, group, "shutdown_requested_by", member.member_id)
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # A static member steps out for a restart: it keeps its tasks (and the group its
            # epoch) until its session runs out, but not those it was revoking (it let go of
            # everything), as Kafka 4.4 does.
            cur = member.current
            out.record(self.records.current(group.group_id, member.member_id, StreamsCurrentValue(
                STATIC_LEAVE_EPOCH, cur.previous_member_epoch, cur.state, cur.active, cur.standby, cur.warmup)))
            self.arm_session(group.group_id, member.member_id,
                             now_ms + self.configs.session_timeout(group.group_id), out)
        else:
            self.remove_members(group, [member.member_id], out, now_ms)
        out.reply(reply, StreamsGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch))

    # ---- the base's hooks: sessions, removal, deletion ---------------------------------------

    def session_timeout(self, group_id: str, meta: StreamsMemberValue) -> int:
        return self.configs.session_timeout(group_id)

    def cancel_timers(self, group_id: str, member_id: str, out: ResultBuilder) -> None:
        """A member's session and its revocation deadline."""
        ModernProtocol.cancel_timers(self, group_id, member_id, out)
        out.then(self.timers.cancel, streams_revoke_key(group_id, member_id))

    def subscribed_after(self, group: StreamsGroup, members: dict) -> tuple[tuple[str, str, int], ...]:
        """The topology's topics: members come and go without changing them."""
        return group.subscribed

    def delete_progress(self, group: StreamsGroup, out: ResultBuilder) -> None:
        """A deleted streams group's topology goes with it."""
        out.record(StreamsTopologyRecord(group.group_id, None))

    def revoke_expired(self, op: TimerOp, now_ms: int) -> Result:
        group = self.groups.get(op.group_id)
        member = group.members.get(op.member_id) if group else None
        if member is None or member.current.state is not StreamsMemberState.UNREVOKED_TASKS \
                or member.epoch != op.generation:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "revocation timeout", Departure.FENCED, group=group)
        self.remove_members(group, [op.member_id], out, now_ms)       # it never gave its tasks back
        return out.build()

    def initial_delay_expired(self, op: TimerOp, now_ms: int) -> Result:
        """The initial rebalance delay ran out: assign the group at its epoch now."""
        group = self.groups.get(op.group_id)
        if group is None or group.epoch <= group.target_epoch or group.topology is None:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, "initial rebalance delay", group=group)
        configured = self._configured(group, group.topology, group.subscribed, out)
        members = {m.member_id: (m.meta, m.current) for m in group.members.values()}
        self.assign(group, members, configured, dict(group.target), group.assignment_configs, out)
        out.record(self.records.target_epoch(group.group_id, group.epoch))
        return out.build()

    def loaded(self, now_ms: int) -> None:
        """After a restart every member gets a fresh session to come back in."""
        for group_id, group in self.groups.items():
            if group.topology is not None:
                self._configured(group, group.topology, group.subscribed, _Staged())
        ModernProtocol.loaded(self, now_ms)

    # ---- topics ---------------------------------------------------------------------------

    def topics_changed(self, now_ms: int) -> Result:
        """Bump the epoch of every group whose topology's topics changed (created internal
        topics make it ready; a changed partition count reconfigures it)."""
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        for group_id in sorted(self.groups):
            group = self.groups[group_id]
            if group.topology is None:
                continue
            subscribed = self._subscribed(group, group.topology)
            if subscribed == group.subscribed:
                continue
            out.changed(group_id, "topic metadata changed", group=group)
            configured = self._configured(group, group.topology, subscribed, out)
            validated = group.topology.epoch if configured.ready else -1
            out.record(self.records.epoch(group_id, group.epoch + 1, subscribed, validated,
                                          group.assignment_configs))
        return out.build()

    # ======================================================================================
    # StreamsGroupDescribe, StreamsGroupTopologyDescriptionUpdate
    # ======================================================================================

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        described = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                other = group_id in self.shard.consumer_groups or group_id in self.shard.share_groups or \
                    group_id in self.shard.groups
                described.append(DescribedStreamsGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND,
                                                       f"Group {group_id} is not a streams group." if other
                                                       else f"Group {group_id} not found."))
                continue
            described.append(self.describe_one(group))
        return Result((), ((reply, tuple(described)),))

    def describe_one(self, group: StreamsGroup) -> DescribedStreamsGroup:
        topology = group.topology
        subtopologies: tuple[DescribedSubtopology, ...] | None = None
        if topology is not None:
            configured = group.configured
            if configured is not None and configured.ready:
                subtopologies = tuple(DescribedSubtopology(
                    s.subtopology_id, tuple(sorted(s.source_topics)), tuple(sorted(s.repartition_sink_topics)),
                    tuple(DescribedTopicInfo(t.name, t.partitions, t.replication_factor, t.configs)
                          for t in s.state_changelog_topics),
                    tuple(DescribedTopicInfo(t.name, t.partitions, t.replication_factor, t.configs)
                          for t in s.repartition_source_topics)) for s in configured.subtopologies or ())
            else:
                subtopologies = tuple(DescribedSubtopology(
                    s.subtopology_id, tuple(sorted(s.source_topics)), tuple(sorted(s.repartition_sink_topics)),
                    tuple(DescribedTopicInfo(t.name, t.partitions, t.replication_factor, t.configs)
                          for t in s.state_changelog_topics),
                    tuple(DescribedTopicInfo(t.name, t.partitions, t.replication_factor, t.configs)
                          for t in s.repartition_source_topics)) for s in topology.subtopologies)
        members = []
        for m in group.members.values():
            offsets = group.task_offsets.get(m.member_id, TaskOffsets())
            assigned = m.current.assigned()
            target = group.target.get(m.member_id, NO_TASKS)
            members.append(DescribedStreamsMember(
                m.member_id, m.epoch, m.meta.instance_id, m.meta.rack_id, m.meta.client_id, m.meta.client_host,
                m.meta.topology_epoch, m.meta.process_id, m.meta.user_endpoint, m.meta.client_tags,
                tuple(sorted((s, p, o) for (s, p), o in offsets.offsets.items())),
                tuple(sorted((s, p, o) for (s, p), o in offsets.end_offsets.items())),
                assigned.active, assigned.standby, assigned.warmup, target.active, target.standby, target.warmup))
        return DescribedStreamsGroup(
            group.group_id, ErrorCode.NONE, None, group.state().value, group.epoch, group.target_epoch,
            topology.epoch if topology is not None else -1, subtopologies, tuple(members), ASSIGNOR)

    def topology_description_update(self, req: TopologyDescriptionUpdate, reply: ReplyTo, now_ms: int) -> Result:
        """KIP-1331: a member's topology description. Kafka 4.4 stores one only with a
        description plug-in configured and otherwise refuses every update before it looks
        at the group; kgroup has no such plug-in (and never asks for a description), so it
        answers as Kafka 4.4 does without one."""
        raise GroupError(ErrorCode.UNSUPPORTED_VERSION, NO_DESCRIPTION_PLUGIN)


class _Staged(ResultBuilder):
    """A builder whose staged changes run at once (for loading, outside any request)."""

    def then(self, effect, *args) -> None:  # type: ignore[override]
        effect(*args)


def _cache_configured(group: StreamsGroup, configured: ConfiguredTopology, key: tuple) -> None:
    group.configured = configured
    group.configured_for = key


def _epoch_relevant(meta: StreamsMemberValue) -> tuple:
    """What of a member's metadata the assignment depends on (Kafka's epoch-relevant configs)."""
    return meta.topology_epoch, meta.rack_id, meta.client_tags, meta.process_id


def _merge(old: StreamsMemberValue | None, req: StreamsGroupHeartbeatRequest) -> StreamsMemberValue:
    def pick(new, previous, default):
        if new is not None:
            return new
        return previous if old is not None else default

    return StreamsMemberValue(
        instance_id=req.instance_id if req.instance_id is not None else (old.instance_id if old else None),
        rack_id=pick(req.rack_id, old.rack_id if old else None, None),
        client_id=req.client_id or (old.client_id if old else ""),
        client_host=req.client_host or (old.client_host if old else ""),
        rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                              else (old.rebalance_timeout_ms if old else 300_000)),
        topology_epoch=req.topology.epoch if req.topology is not None else (old.topology_epoch if old else -1),
        process_id=pick(req.process_id, old.process_id if old else None, ""),
        user_endpoint=req.user_endpoint if req.user_endpoint is not None else (old.user_endpoint if old else None),
        client_tags=tuple(sorted(req.client_tags)) if req.client_tags is not None
        else (old.client_tags if old else ()),
    )


def _known_member(group: StreamsGroup, req: StreamsGroupHeartbeatRequest) -> StreamsGroupMember:
    """The member a heartbeat of a member already in the group (or its leave) names: by
    member id, or by instance id, which another member id may have fenced."""
    if req.instance_id is None:
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {req.member_id} is not a member of group {group.group_id}.")
        return member
    static = group.static_member(req.instance_id)
    if static is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
    if static.member_id != req.member_id:
        raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                         f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                         f"{static.member_id}.")
    return static


def _check_epoch(member: StreamsGroupMember, req: StreamsGroupHeartbeatRequest) -> None:
    """Ahead is fenced; behind is fenced unless it is the previous epoch and the member holds
    nothing beyond its assignment (it missed the answer that moved it on)."""
    if req.member_epoch > member.epoch:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                         f"The streams group member has a greater member epoch ({req.member_epoch}) than the one "
                         f"known by the group coordinator ({member.epoch}). The member must abandon all its "
                         f"partitions and rejoin.")
    if req.member_epoch < member.epoch:
        assigned = member.current.assigned()
        contained = (req.active_tasks is not None and set(req.active_tasks) <= set(assigned.active)
                     and set(req.standby_tasks or ()) <= set(assigned.standby)
                     and set(req.warmup_tasks or ()) <= set(assigned.warmup))
        if req.member_epoch != member.current.previous_member_epoch or not contained:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The streams group member has a smaller member epoch ({req.member_epoch}) than the one "
                             f"known by the group coordinator ({member.epoch}). The member must abandon all its "
                             f"partitions and rejoin.")



def _view(group: StreamsGroup, member: _Member) -> dict[str, tuple[StreamsMemberValue, StreamsCurrentValue]]:
    """The group's members as this request leaves them: the member as it is now, without the
    static member it replaces."""
    members = {m.member_id: (m.meta, m.current) for m in group.members.values()
               if member.replaced is None or m.member_id != member.replaced.member_id}
    members[member.member_id] = (member.meta, member.current)
    return members


def _by_task(reported) -> dict[tuple[str, int], int]:
    """Reported (subtopology, partition, offset) entries by task; one task twice is refused,
    as Kafka 4.4 refuses it (the same words for task offsets and end offsets)."""
    out: dict[tuple[str, int], int] = {}
    for s, p, o in reported:
        if (s, p) in out:
            raise _invalid(f"Task offsets contain a duplicate entry for subtopology {s} and partition {p}.")
        out[s, p] = o
    return out


def _check_tasks(configured: ConfiguredTopology, tasks) -> None:
    if not tasks:
        return
    counts = configured.tasks()
    for s, p in tasks:
        if s not in counts:
            raise _invalid(f"Subtopology {s} does not exist in the topology.")
        if p < 0 or p >= counts[s]:
            raise _invalid(f"Task {p} for subtopology {s} is invalid. Number of tasks for this subtopology: "
                           f"{counts[s]}")


def _tasks(t: TaskTuple) -> Tasks:
    return Tasks(frozenset(t.active), frozenset(t.standby), frozenset(t.warmup))


def _moved(group: StreamsGroup, member: _Member) -> TaskHolders:
    """The holders index with the member's tasks under its new process."""
    holders = TaskHolders({**group.holders.active},
                          {k: set(v) for k, v in group.holders.standby.items()},
                          {k: set(v) for k, v in group.holders.warmup.items()})
    holders.remove(member.old_meta.process_id, member.current)
    holders.add(member.meta.process_id, member.current)
    return holders
