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

What it shares with consumer and share groups (members with their epochs, the group epoch,
the target assignment and its epoch, the count of members not at the target, replay, and so
the group events) is modern_group.py's: its five records by role, and the topology record
as the one record only streams groups have (`MORE_RECORDS`). Its hooks add the task holders
(`_holds`), NotReady (`state`, `state_after`) and what the views and events show of a
member's tasks: the source partitions of its active tasks.

Durable as a whole: only `replay` (`ModernGroup.apply`) changes what the records hold. Beside
that, a group keeps runtime state that Kafka keeps in memory too and that is rebuilt on load:
the configured topology (a cache of streams_topology.configure), the changelog offsets the
members report (for warm-ups), the member that asked the application to shut down, and the
epoch of the endpoint information the members were sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, ClassVar, Iterator

from kgroup.core.modern_group import ModernGroup, ModernMember, ModernRecords, Phase, register_records
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


_BY_PHASE = {Phase.EMPTY: StreamsGroupState.EMPTY, Phase.ASSIGNING: StreamsGroupState.ASSIGNING,
             Phase.RECONCILING: StreamsGroupState.RECONCILING, Phase.STABLE: StreamsGroupState.STABLE}


@dataclass(slots=True)
class TaskOffsets:
    """A member's last reported changelog offset sums and their end offsets, per task."""

    offsets: dict[TaskId, int] = field(default_factory=dict)
    end_offsets: dict[TaskId, int] = field(default_factory=dict)


@dataclass(slots=True)
class StreamsGroupMember(ModernMember):
    meta: StreamsMemberValue
    current: StreamsCurrentValue = NEW_STREAMS_MEMBER

    @property
    def process_id(self) -> str:
        return self.meta.process_id


def _ready(topology: StreamsTopology | None, validated_topology_epoch: int) -> bool:
    """Whether a group's topology was found ready (its topics all there, with the right
    partition counts) at its group epoch: the epoch record says which topology epoch was."""
    return topology is not None and validated_topology_epoch == topology.epoch


def source_topics(topology: StreamsTopology | None) -> dict[str, tuple[str, ...]]:
    """Subtopology id -> the topics its tasks read (task (s, p) reads partition p of each)."""
    return {s.subtopology_id: (*s.source_topics, *(t.name for t in s.repartition_source_topics))
            for s in (topology.subtopologies if topology is not None else ())}


@register_records
@dataclass(slots=True)
class StreamsGroup(ModernGroup):
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()
    topology: StreamsTopology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target: dict[str, TaskTuple] = field(default_factory=dict)
    # Which process holds each task now, kept by replay (what reconciliation asks).
    holders: TaskHolders = field(default_factory=TaskHolders, compare=False)
    # ---- runtime, not durable (rebuilt on load, as Kafka keeps it in memory) ----
    configured: ConfiguredTopology | None = field(default=None, compare=False)
    configured_for: tuple = field(default=(), compare=False)
    # (topology, the broker's topics map, the topology's topics that exist): what
    # `StreamsProtocol._subscribed` worked out last, for the same two objects.
    subscribed_for: tuple = field(default=(), compare=False)
    task_offsets: dict[str, TaskOffsets] = field(default_factory=dict, compare=False)
    shutdown_requested_by: str | None = field(default=None, compare=False)
    endpoint_epoch: int = field(default=0, compare=False)

    RECORDS: ClassVar[ModernRecords] = ModernRecords(
        StreamsGroupEpochRecord, StreamsMemberRecord, StreamsTargetRecord, StreamsTargetEpochRecord,
        StreamsCurrentRecord)
    MORE_RECORDS: ClassVar[tuple[type, ...]] = (StreamsTopologyRecord,)
    TYPE: ClassVar[GroupType] = STREAMS
    MEMBER: ClassVar[type] = StreamsGroupMember
    NEW_CURRENT: ClassVar[StreamsCurrentValue] = NEW_STREAMS_MEMBER

    def state(self) -> StreamsGroupState:
        if self.members and not _ready(self.topology, self.validated_topology_epoch):
            return StreamsGroupState.NOT_READY
        return _BY_PHASE[self.phase()]

    @classmethod
    def state_of(cls, phase: Phase) -> StreamsGroupState:
        return _BY_PHASE[phase]

    @classmethod
    def state_after(cls, group: "StreamsGroup | None", phase: Phase, records: list[Any]) -> StreamsGroupState:
        topology = group.topology if group is not None else None
        validated = group.validated_topology_epoch if group is not None else -1
        for r in records:
            if type(r) is StreamsTopologyRecord:
                topology = r.topology
            elif type(r) is StreamsGroupEpochRecord and r.epoch is not None:
                validated = r.validated_topology_epoch
        if phase is not Phase.EMPTY and not _ready(topology, validated):
            return StreamsGroupState.NOT_READY
        return _BY_PHASE[phase]

    @classmethod
    def held_by_name(cls, group: "StreamsGroup | None", records: list[Any],
                     name: Callable[[str], str]) -> Callable[[Any], tuple[tuple[str, int], ...]]:
        """The source partitions of a member's active tasks (as the views show them)."""
        topology = group.topology if group is not None else None
        for r in records:
            if type(r) is StreamsTopologyRecord:
                topology = r.topology
        sources = source_topics(topology)
        return lambda current: tuple(sorted({(topic, p) for s, p, _ in current.active
                                             for topic in sources.get(s, ())}))

    @staticmethod
    def is_converged(current: StreamsCurrentValue, target_epoch: int) -> bool:
        return is_converged(current, target_epoch)

    def assignor_name(self, config: object) -> str:
        """The task assignor (there is one, `sticky`), as the views name it."""
        return TASK_ASSIGNOR

    def partitions_of(self, member: StreamsGroupMember) -> Iterator[tuple[str, int]]:
        """(topic, partition) of what a member holds now, as the views show it: the source
        partitions of its active tasks (task (s, p) reads partition p of subtopology s's
        source topics)."""
        sources = source_topics(self.topology)
        return ((topic, p) for s, p, _ in member.current.active for topic in sources.get(s, ()))

    def epoch_record(self, epoch: int, subscribed: tuple[tuple[str, str, int], ...]) -> StreamsGroupEpochRecord:
        return StreamsGroupEpochRecord(self.group_id, epoch, subscribed, self.validated_topology_epoch,
                                       self.assignment_configs)

    def snapshot(self) -> list:
        """The records that rebuild this group from nothing: the base's, with the topology."""
        out = ModernGroup.snapshot(self)
        if self.topology is not None:
            out.insert(1, StreamsTopologyRecord(self.group_id, self.topology))
        return out

    # ---- replay: the base's, with the task holders and the topology -------------------------

    def _epoch(self, record: StreamsGroupEpochRecord) -> None:
        ModernGroup._epoch(self, record)
        self.validated_topology_epoch = record.validated_topology_epoch
        self.assignment_configs = record.assignment_configs

    def apply_more(self, record: StreamsTopologyRecord) -> None:
        if type(record) is not StreamsTopologyRecord:
            ModernGroup.apply_more(self, record)
        self.topology = record.topology
        self.configured = None

    def _holds(self, member: StreamsGroupMember, value: StreamsCurrentValue | None) -> None:
        self.holders.remove(member.process_id, member.current)
        if value is not None:
            self.holders.add(member.process_id, value)

    def _meta(self, member: StreamsGroupMember, value: StreamsMemberValue) -> None:
        if member.process_id != value.process_id:
            self.holders.remove(member.process_id, member.current)
            self.holders.add(value.process_id, member.current)
        member.meta = value

    def _removed(self, member: StreamsGroupMember) -> None:
        self.task_offsets.pop(member.member_id, None)
        if not self.members:
            # The whole application stopped: a shutdown request is done with.
            self.shutdown_requested_by = None
