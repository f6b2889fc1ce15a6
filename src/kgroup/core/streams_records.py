"""Records of streams groups (KIP-1071) in the group-metadata log, and their values.

A streams group is durable as six kinds of record, like Kafka's StreamsGroup* records: the
group epoch (with the topics' metadata it was computed from, the topology epoch it
validated and the assignment configs it used), the topology, each member's metadata, each
member's target assignment, the target assignment's epoch, and each member's current
assignment. A value of None is a tombstone. All but the topology are the five records every
modern kind has, by role (StreamsGroup.RECORDS; the topology is its MORE_RECORDS).

Tasks are (subtopology id, partition). Task sets are sorted tuples of (subtopology,
partition); a member's active tasks carry the epoch at which each was assigned, as
(subtopology, partition, epoch): an offset commit of a task is accepted from any member
epoch at or after it (Kafka 4.4's assignment epochs). Pure data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from kgroup.core.streams_topology import StreamsTopology

TaskId = tuple[str, int]
TaskIds = tuple[TaskId, ...]                              # sorted
ActiveTasks = tuple[tuple[str, int, int], ...]            # (subtopology, partition, epoch), sorted


def task_ids(tasks: Iterable[TaskId]) -> TaskIds:
    return tuple(sorted(tasks))


def active_tasks(tasks: dict[TaskId, int]) -> ActiveTasks:
    return tuple(sorted((s, p, e) for (s, p), e in tasks.items()))


def active_epochs(tasks: ActiveTasks) -> dict[TaskId, int]:
    return {(s, p): e for s, p, e in tasks}


class StreamsMemberState(Enum):
    """Where a member is on its way to its target (Kafka's streams MemberState)."""

    STABLE = "STABLE"
    UNREVOKED_TASKS = "UNREVOKED_TASKS"            # it must give tasks up before it moves on
    UNRELEASED_TASKS = "UNRELEASED_TASKS"          # at the target epoch, waiting for others' tasks


@dataclass(frozen=True, slots=True)
class TaskTuple:
    """Active, standby and warm-up tasks (a target assignment)."""

    active: TaskIds = ()
    standby: TaskIds = ()
    warmup: TaskIds = ()

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)


NO_TASKS = TaskTuple()


@dataclass(frozen=True, slots=True)
class StreamsGroupEpochRecord:
    """The group epoch; None deletes the group. `subscribed`: (name, topic id, partitions) of
    every topic the topology needs that exists, sorted (its change bumps the epoch);
    `validated_topology_epoch`: the topology epoch found ready at this epoch (-1: none);
    `assignment_configs`: the assignment configs the target was computed with."""

    group_id: str
    epoch: int | None
    subscribed: tuple[tuple[str, str, int], ...] = ()
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StreamsTopologyRecord:
    group_id: str
    topology: StreamsTopology | None


@dataclass(frozen=True, slots=True)
class StreamsMemberValue:
    """Who a member is and how it runs (Kafka's StreamsGroupMemberMetadataValue)."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StreamsMemberRecord:
    group_id: str
    member_id: str
    value: StreamsMemberValue | None


@dataclass(frozen=True, slots=True)
class StreamsTargetRecord:
    """One member's target assignment (None removes it). `partitions` is its name in the
    modern-group base's replay (ModernGroup.apply), where a consumer's target holds partitions."""

    group_id: str
    member_id: str
    tasks: TaskTuple | None

    @property
    def partitions(self) -> TaskTuple | None:
        return self.tasks


@dataclass(frozen=True, slots=True)
class StreamsTargetEpochRecord:
    group_id: str
    epoch: int | None


@dataclass(frozen=True, slots=True)
class StreamsCurrentValue:
    """A member's current assignment: its epochs, state, the tasks it holds and the tasks it
    must still give up (pending revocation)."""

    member_epoch: int
    previous_member_epoch: int
    state: StreamsMemberState
    active: ActiveTasks = ()
    standby: TaskIds = ()
    warmup: TaskIds = ()
    pending_active: ActiveTasks = ()
    pending_standby: TaskIds = ()
    pending_warmup: TaskIds = ()

    def assigned(self) -> TaskTuple:
        """What it holds, without the epochs."""
        return TaskTuple(tuple((s, p) for s, p, _ in self.active), self.standby, self.warmup)

    def pending(self) -> TaskTuple:
        return TaskTuple(tuple((s, p) for s, p, _ in self.pending_active), self.pending_standby,
                         self.pending_warmup)


NEW_STREAMS_MEMBER = StreamsCurrentValue(0, 0, StreamsMemberState.STABLE)


@dataclass(frozen=True, slots=True)
class StreamsCurrentRecord:
    group_id: str
    member_id: str
    value: StreamsCurrentValue | None

