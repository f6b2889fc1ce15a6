"""What the streams groups' task assignors take and return (KIP-1071).

A task is (subtopology id, partition); a member's tasks come in three kinds: active (it
processes the task), standby (it keeps a copy of the task's state from the changelog) and
warm-up (a standby given to restore a task's state before the task moves to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# (subtopology id, partition): one task.
TaskId = tuple[str, int]
NO_TASKS: frozenset[TaskId] = frozenset()


@dataclass(frozen=True, slots=True)
class TaskSubtopology:
    """What the assignor needs of a subtopology: its number of tasks (the most partitions of
    its source topics) and whether it keeps state (has changelog topics)."""

    subtopology_id: str
    tasks: int
    stateful: bool


@dataclass(frozen=True, slots=True)
class Tasks:
    """A member's tasks by kind (a target assignment, or what it holds now)."""

    active: frozenset[TaskId] = NO_TASKS
    standby: frozenset[TaskId] = NO_TASKS
    warmup: frozenset[TaskId] = NO_TASKS

    def all(self) -> frozenset[TaskId]:
        return self.active | self.standby | self.warmup

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)


NO_ASSIGNMENT = Tasks()


@dataclass(frozen=True, slots=True)
class TaskMember:
    """A member as the assignor sees it: its process, what it holds now, and the changelog
    offset sums it reported (its state's position and the changelogs' ends, per task)."""

    process_id: str
    current: Tasks = NO_ASSIGNMENT
    task_offsets: Mapping[TaskId, int] = field(default_factory=dict)
    task_end_offsets: Mapping[TaskId, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskAssignmentConfig:
    """The group's assignment configs (Kafka's streams.* group configs)."""

    num_standby_replicas: int = 0
    num_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10_000
