"""A streams group (KIP-1071): Kafka Streams instances sharing an application's tasks.

How this works: the coordinator owns the assignment, as for consumer groups, but what it
assigns is *tasks* of the application's topology, not partitions, and what a member
subscribes to is the topology itself: the first member to join sends it, the group keeps it
(streams_topology.py checks it against the topics that exist and says which internal topics
the broker must create). The group epoch moves whenever what the assignment depends on
changes: a member joins, leaves or changes its process, rack, client tags or topology epoch;
the topology becomes ready (its topics exist with the right partition counts) or its topics'
metadata changes; the assignment configs change (streams.num.standby.replicas, ...); a warm-up
task catches up. When the group epoch is ahead of the target assignment's epoch, the task
assignor (assignors/streams_sticky.py) computes a new target: active, standby and warm-up
tasks per member. Each member then walks to its target one heartbeat at a time
(streams_reconcile.py: a task is handed over only after its owner revoked it).

The group reports Kafka's states: Empty (no members), NotReady (the topology is missing topics
or is not configured yet), Assigning (the group epoch is ahead of the target), Reconciling
(some member has not reached the target), Stable.

Durable as a whole: only `replay` (`StreamsGroup.apply`) changes what the records hold. Beside
that, a group keeps runtime state that Kafka keeps in memory too and that is rebuilt on load:
the configured topology (a cache of streams_topology.configure), the changelog offsets the
members report (for warm-ups), the member that asked the application to shut down, and the
epoch of the endpoint information the members were sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Iterator

from kgroup.core.streams_reconcile import TaskHolders, is_converged
from kgroup.core.streams_records import (
    NEW_STREAMS_MEMBER,
    StreamsCurrentRecord,
    StreamsCurrentValue,
    StreamsGroupEpochRecord,
    StreamsMemberRecord,
    StreamsMemberValue,
    StreamsTargetEpochRecord,
    StreamsTargetRecord,
    StreamsTopologyRecord,
    TaskId,
    TaskTuple,
)
from kgroup.core.streams_topology import ConfiguredTopology, StreamsTopology
from kgroup.group_types import STREAMS, GroupType

LEAVE_EPOCH = -1
# The streams task assignor a group runs (streams.assignor; the sticky one is all there is).
TASK_ASSIGNOR = "sticky"
STATIC_LEAVE_EPOCH = -2


class StreamsGroupState(Enum):
    """As StreamsGroupDescribe, ListGroups and DescribeGroups report it."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(slots=True)
class TaskOffsets:
    """A member's last reported changelog offset sums and their end offsets, per task."""

    offsets: dict[TaskId, int] = field(default_factory=dict)
    end_offsets: dict[TaskId, int] = field(default_factory=dict)


@dataclass(slots=True)
class StreamsGroupMember:
    member_id: str
    meta: StreamsMemberValue
    current: StreamsCurrentValue = NEW_STREAMS_MEMBER

    @property
    def epoch(self) -> int:
        return self.current.member_epoch

    @property
    def process_id(self) -> str:
        return self.meta.process_id


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    # (name, topic id, partitions) of the topology's topics that exist, at `epoch`.
    subscribed: tuple[tuple[str, str, int], ...] = ()
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()
    topology: StreamsTopology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target: dict[str, TaskTuple] = field(default_factory=dict)
    # Which process holds each task now, kept by replay (what reconciliation asks).
    holders: TaskHolders = field(default_factory=TaskHolders, compare=False)
    # Members not converged to the target epoch, kept by replay (the state is a read).
    unconverged: int = field(default=0, compare=False)
    # ---- runtime, not durable (rebuilt on load, as Kafka keeps it in memory) ----
    configured: ConfiguredTopology | None = field(default=None, compare=False)
    configured_for: tuple = field(default=(), compare=False)
    task_offsets: dict[str, TaskOffsets] = field(default_factory=dict, compare=False)
    shutdown_requested_by: str | None = field(default=None, compare=False)
    endpoint_epoch: int = field(default=0, compare=False)
    # Moves with every record replayed into the group (what the group events look at).
    version: int = field(default=0, compare=False)

    # What the registry of group kinds asks of every group (its kind; a live group; its status).
    TYPE: ClassVar[GroupType] = STREAMS
    live: ClassVar[bool] = True

    def status(self) -> tuple[str, int]:
        """(state, group epoch), as the group events and the views report a modern group."""
        return self.state().value, self.epoch

    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.epoch > self.target_epoch:
            return StreamsGroupState.ASSIGNING
        return StreamsGroupState.RECONCILING if self.unconverged else StreamsGroupState.STABLE

    def assignor_name(self, config: object) -> str:
        """The task assignor (there is one, `sticky`), as the views name it."""
        return TASK_ASSIGNOR

    def partitions_of(self, member: StreamsGroupMember) -> Iterator[tuple[str, int]]:
        """(topic, partition) of what a member holds now, as the views show it: the source
        partitions of its active tasks (task (s, p) reads partition p of subtopology s's
        source topics)."""
        sources = {s.subtopology_id: (*s.source_topics, *(t.name for t in s.repartition_source_topics))
                   for s in (self.topology.subtopologies if self.topology is not None else ())}
        return ((topic, p) for s, p, _ in member.current.active for topic in sources.get(s, ()))

    def static_member(self, instance_id: str | None) -> StreamsGroupMember | None:
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.meta.instance_id == instance_id:
                return m
        return None

    def converged(self, current: StreamsCurrentValue) -> bool:
        return is_converged(current, self.target_epoch)

    def snapshot(self) -> list:
        """The records that rebuild this group from nothing (for log snapshots)."""
        gid = self.group_id
        out: list = [StreamsGroupEpochRecord(gid, self.epoch, self.subscribed, self.validated_topology_epoch,
                                             self.assignment_configs)]
        if self.topology is not None:
            out.append(StreamsTopologyRecord(gid, self.topology))
        out += [StreamsMemberRecord(gid, mid, m.meta) for mid, m in self.members.items()]
        out += [StreamsTargetRecord(gid, mid, t) for mid, t in sorted(self.target.items())]
        out.append(StreamsTargetEpochRecord(gid, self.target_epoch))
        out += [StreamsCurrentRecord(gid, mid, m.current) for mid, m in self.members.items()]
        return out

    # ---- replay ---------------------------------------------------------------------------

    def _set_current(self, member: StreamsGroupMember, value: StreamsCurrentValue) -> None:
        self.holders.remove(member.process_id, member.current)
        self.unconverged += (not self.converged(value)) - (not self.converged(member.current))
        member.current = value
        self.holders.add(member.process_id, value)

    def _recount(self) -> None:
        self.unconverged = sum(1 for m in self.members.values() if not self.converged(m.current))

    @classmethod
    def apply(cls, groups: dict[str, "StreamsGroup"], record) -> bool:
        """Replay one streams-group record into `groups`; True if it created the group."""
        kind = type(record)
        if kind is StreamsGroupEpochRecord and record.epoch is None:
            groups.pop(record.group_id, None)
            return False
        group = groups.get(record.group_id)
        created = group is None
        if created:
            group = groups[record.group_id] = cls(record.group_id)
        group.version += 1
        if kind is StreamsGroupEpochRecord:
            group.epoch = record.epoch
            group.subscribed = record.subscribed
            group.validated_topology_epoch = record.validated_topology_epoch
            group.assignment_configs = record.assignment_configs
        elif kind is StreamsTopologyRecord:
            group.topology = record.topology
            group.configured = None
        elif kind is StreamsMemberRecord:
            group._apply_member(record)
        elif kind is StreamsTargetRecord:
            if record.tasks is None:
                group.target.pop(record.member_id, None)
            else:
                group.target[record.member_id] = record.tasks
        elif kind is StreamsTargetEpochRecord:
            if record.epoch is not None:
                group.target_epoch = record.epoch
                group._recount()
        elif kind is StreamsCurrentRecord:
            member = group.members.get(record.member_id)
            if member is not None and record.value is not None:
                group._set_current(member, record.value)
        else:
            raise TypeError(f"not a streams-group record: {record!r}")
        return created

    def _apply_member(self, record: StreamsMemberRecord) -> None:
        members = self.members
        if record.value is None:
            member = members.pop(record.member_id, None)
            if member is not None:
                self.holders.remove(member.process_id, member.current)
                self.unconverged -= not self.converged(member.current)
                self.task_offsets.pop(record.member_id, None)
                if not members:
                    # The whole application stopped: a shutdown request is done with.
                    self.shutdown_requested_by = None
        elif record.member_id in members:
            member = members[record.member_id]
            if member.process_id != record.value.process_id:
                self.holders.remove(member.process_id, member.current)
                self.holders.add(record.value.process_id, member.current)
            member.meta = record.value
        else:
            member = members[record.member_id] = StreamsGroupMember(record.member_id, record.value)
            self.unconverged += not self.converged(member.current)
