"""Warm-up tasks: a stateful task moves only to a process that has caught up with its state.

The sticky placement (streams_sticky) balances tasks without asking how much state a move
costs. Moving a stateful task to a process that lacks its state stops the task until the new
owner has restored its stores from the changelog. Kafka Streams' answer (KIP-441, carried
into streams groups by KIP-1071) is the warm-up task: the task stays active where its state
is, and the process it is meant for gets it as a warm-up (a standby that restores) until it
has caught up; then the next assignment moves it. Kafka 4.4 has none of this yet (its
assignment refiner is a no-op): the coordinator asks for warm-ups only with the broker's
`[group] streams_assign_warmups`, and otherwise passes a budget of 0.

How this works, for each stateful task whose target active owner is on another process
than the member running it now:

1. Caught up? A process is caught up on a task when one of its members runs it, or when its
   reported changelog offset sum is within `acceptable_recovery_lag` of the task's end offset
   sum (the highest any member reported). Without any end offsets reported, nothing is known
   to lag, and the task moves as Kafka 4.4 moves it (its refiner assigns no warm-ups).
2. If the target owner's process is caught up, the task moves now.
3. Otherwise the task stays active on the member running it, and the target owner gets it as
   a warm-up, while fewer than `num_warmup_replicas` warm-ups are out. A standby of the task
   on the process it stays on is dropped (a process holds a task once); past the budget, the
   target owner takes that standby instead of a warm-up, and a later assignment moves the
   task. With a budget of 0 nothing is held back (Kafka's refiner does nothing then either).

A new assignment runs when a member reports that a target warm-up has caught up
(`caught_up_warmups`), so the move completes without a probing interval. Tasks are visited
in sorted order, so the budget goes to the same tasks for the same inputs. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgroup.assignors.streams_spec import (
    TaskAssignmentConfig,
    TaskId,
    TaskMember,
    Tasks,
    TaskSubtopology,
)


class Lags:
    """How far each process's state of each task is behind the task's changelog ends."""

    def __init__(self, members: Mapping[str, TaskMember], acceptable: int) -> None:
        self.acceptable = acceptable
        self.ends: dict[TaskId, int] = {}
        self.offsets: dict[tuple[str, TaskId], int] = {}
        self.running: set[tuple[str, TaskId]] = set()
        for member in members.values():
            for task, end in member.task_end_offsets.items():
                if end > self.ends.get(task, -1):
                    self.ends[task] = end
            for task, offset in member.task_offsets.items():
                key = (member.process_id, task)
                self.offsets[key] = max(offset, self.offsets.get(key, offset))
            self.running.update((member.process_id, task) for task in member.current.active)

    def caught_up(self, process_id: str, task: TaskId) -> bool:
        if (process_id, task) in self.running:
            return True
        end = self.ends.get(task)
        if end is None:
            return True
        offset = self.offsets.get((process_id, task), 0)
        # Kafka Streams reports a running task's offset as a sentinel below zero (latest).
        return offset < 0 or end - offset <= self.acceptable


def add_warmups(subtopologies: Iterable[TaskSubtopology], members: Mapping[str, TaskMember],
                target: Mapping[str, Tasks], config: TaskAssignmentConfig) -> dict[str, Tasks]:
    """`target` with the moves of stateful tasks to processes not caught up held back behind
    warm-up tasks (see the module comment)."""
    result = dict(target)
    if not members or config.num_warmup_replicas <= 0:
        return result
    lags = Lags(members, config.acceptable_recovery_lag)
    running = {task: mid for mid in sorted(members) for task in members[mid].current.active}
    owner = {task: mid for mid, tasks in target.items() for task in tasks.active}
    stateful = sorted((s.subtopology_id, p) for s in subtopologies if s.stateful for p in range(s.tasks))
    active = {mid: set(t.active) for mid, t in result.items()}
    standby = {mid: set(t.standby) for mid, t in result.items()}
    warmup: dict[str, set[TaskId]] = {mid: set() for mid in result}
    budget = config.num_warmup_replicas
    process = {mid: m.process_id for mid, m in members.items()}
    for task in stateful:
        to, now = owner.get(task), running.get(task)
        if to is None or now is None or now not in result or process[now] == process[to]:
            continue
        if lags.caught_up(process[to], task):
            continue
        active[to].discard(task)
        active[now].add(task)
        displaced = False
        for mid in result:
            if process[mid] == process[now] and task in standby[mid]:
                standby[mid].discard(task)
                displaced = True
        if budget > 0:
            warmup[to].add(task)
            budget -= 1
        elif displaced:
            standby[to].add(task)
    return {mid: Tasks(frozenset(active[mid]), frozenset(standby[mid]), frozenset(warmup[mid])) for mid in result}


def caught_up_warmups(members: Mapping[str, TaskMember], target: Mapping[str, Tasks],
                      config: TaskAssignmentConfig) -> list[tuple[str, TaskId]]:
    """The (member, task) warm-ups of `target` whose process has caught up: the next
    assignment moves the task there, so the group should assign again."""
    lags = Lags(members, config.acceptable_recovery_lag)
    return sorted((mid, task) for mid, tasks in target.items() if mid in members for task in tasks.warmup
                  if lags.ends.get(task) is not None and lags.caught_up(members[mid].process_id, task))
