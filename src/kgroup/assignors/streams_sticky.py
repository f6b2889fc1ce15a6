"""The streams groups' task assignor (KIP-1071): Kafka 4.4's `sticky`, placed deterministically.

A streams group assigns *tasks*, not partitions: task (S, p) is partition p of every source
topic of subtopology S. Each task runs once as an *active* task; a stateful subtopology's
tasks also get `num_standby_replicas` *standby* copies, which keep the task's state stores
warm from the changelog on other processes so a failover does not restore from scratch.
Members belong to *processes* (a Kafka Streams instance with several stream threads is one
process, one member per thread): state lives per process, so a process never holds a task
twice (active, standby or warm-up), and loads are counted per process.

How this works (Kafka 4.4's StickyTaskAssignor, step for step):

1. Quotas: active tasks per member ``ceil(A / N)`` and all tasks per member (standbys too)
   ``ceil(T / N)``. Whenever a member reaches a quota, it leaves the pool and the quota is
   recomputed over the remaining tasks and members, so counts end up within one.
2. Active tasks, in three passes. (a) Each task goes back to the member that ran it, if that
   member is under its quota (tasks in partition order, so a range-like assignment survives).
   (b) A task left over goes to a member that held it as a standby (or reported state for it:
   a restarted instance gets its old tasks back from its state directory), the most caught-up
   first, if under quota. (c) The rest go, one by one in subtopology order, to the least
   loaded process (tasks per member), to its least loaded member.
3. Standby tasks of stateful subtopologies, each replica in turn: to the previous active
   owner if its process does not hold the task now, else to a previous standby holder, else
   (after the others) to the least loaded process that does not hold it. Too few processes:
   fewer standbys (Kafka logs a warning; so does nothing here, the result says it).

Where Kafka 4.4 iterates hash maps (the members, the processes, a process's members), this
module iterates in the same order (kgroup/java_hash.py: the maps' capacities and insert
calls as Kafka's), and its priority queues break ties as Java's do; the counts, the quotas
and the order of the passes are Kafka's. So the placement is Kafka's to the task, for ids
as clients make them (tests/reference/test_streams_assignor.py runs Kafka's own class on
the same inputs, with "m0".."m9" and with random ids). One thing is assumed: Kafka fills
its member map from the group's members in the order kgroup holds them (join order), which
matters only when two member ids share a bucket. Warm-up tasks are added by
`assignors.streams_warmups` after this. Pure: no I/O, no clock.
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
from kgroup.assignors.streams_warmups import add_warmups
from kgroup.java_hash import java_hash_order

def _per_member(tasks: int, members: int) -> int:
    return -(-tasks // members) if members else 0


class _Queue:
    """A binary heap that breaks ties as java.util.PriorityQueue does (elements offered one by
    one, sifted up and down with the same comparisons), keyed by a function. With the same
    elements offered in the same order it polls in Kafka's order, so equal loads go where
    Kafka sends them. An element's key is read once, when it is offered: the assignor only
    changes an element (a process's load, a member's count) between its poll and its next
    offer. Entries are (key, element) pairs compared on the key alone."""

    __slots__ = ("items", "key")

    def __init__(self, items, key) -> None:
        self.items: list = []
        self.key = key
        for item in items:
            self.offer(item)

    def __bool__(self) -> bool:
        return bool(self.items)

    def offer(self, x) -> None:
        items = self.items
        kx = self.key(x)
        entry = (kx, x)
        items.append(entry)
        k = len(items) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = items[parent]
            if kx >= e[0]:
                break
            items[k] = e
            k = parent
        items[k] = entry

    def poll(self):
        items = self.items
        result = items[0][1]
        last = items.pop()
        n = len(items)
        if n:
            k, kx, half = 0, last[0], n >> 1
            while k < half:
                child = 2 * k + 1
                c = items[child]
                right = child + 1
                if right < n and c[0] > items[right][0]:
                    child = right
                    c = items[child]
                if kx <= c[0]:
                    break
                items[k] = c
                k = child
            items[k] = last
        return result


class _Process:
    """One process's members and what the assignment gave them so far (Kafka's ProcessState)."""

    __slots__ = ("process_id", "counts", "active", "standby", "held", "load", "given", "by_count")

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.counts: dict[str, int] = {}        # member id -> tasks given (active and standby)
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.held: set[TaskId] = set()
        self.load = 0.0
        self.given = 0                          # the sum of `counts`
        self.by_count: _Queue | None = None     # [member id, count] entries, built when needed

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.active[member_id] = set()
        self.standby[member_id] = set()
        self._reload()

    def _reload(self) -> None:
        self.load = self.given / len(self.counts)

    def add(self, member_id: str, task: TaskId, active: bool) -> int:
        """Give `task` to `member_id`; its new task count."""
        self.by_count = None
        return self._add(member_id, task, active)

    def _add(self, member_id: str, task: TaskId, active: bool) -> int:
        if task not in self.held:
            self.held.add(task)
            (self.active if active else self.standby)[member_id].add(task)
        count = self.counts[member_id] = self.counts[member_id] + 1
        self.given += 1
        self.load = self.given / len(self.counts)
        return count

    def add_to_least_loaded(self, task: TaskId, active: bool) -> int:
        if len(self.counts) == 1:
            return self._add(next(iter(self.counts)), task, active)
        if self.by_count is None:
            # Kafka's memberToTaskCounts: a HashMap of the process's members, walked into the queue.
            self.by_count = _Queue(([m, self.counts[m]] for m in java_hash_order(self.counts)), _COUNT)
        entry = self.by_count.poll()
        entry[1] = count = self._add(entry[0], task, active)
        self.by_count.offer(entry)
        return count


def _COUNT(entry: list) -> int:
    return entry[1]


def _LOAD(process: "_Process") -> float:
    return process.load


class _Placement:
    """One run of the assignor (Kafka's LocalState)."""

    def __init__(self, subtopologies: Iterable[TaskSubtopology], members: Mapping[str, TaskMember],
                 config: TaskAssignmentConfig) -> None:
        self.standbys = config.num_standby_replicas
        subs = sorted(subtopologies, key=lambda s: s.subtopology_id)
        self.active_tasks = [(s.subtopology_id, p) for s in subs for p in range(s.tasks)]
        self.stateful_tasks = [(s.subtopology_id, p) for s in subs if s.stateful for p in range(s.tasks)]
        self.total_active = len(self.active_tasks)
        self.total = self.total_active + len(self.stateful_tasks) * self.standbys
        self.active_capacity = self.task_capacity = self.members = len(members)
        self.active_quota = _per_member(self.total_active, self.active_capacity)
        self.task_quota = _per_member(self.total, self.task_capacity)
        self.processes: dict[str, _Process] = {}
        self.process_of: dict[str, str] = {}
        self.prev_active: dict[TaskId, str] = {}
        candidates: dict[TaskId, list[tuple[int, int, str]]] = {}
        # Kafka puts the members in a HashMap (TargetAssignmentBuilder) and walks it.
        for member_id in java_hash_order(members):
            member = members[member_id]
            self.processes.setdefault(member.process_id, _Process(member.process_id)).add_member(member_id)
            self.process_of[member_id] = member.process_id
            for task in sorted(member.current.active):
                self.prev_active[task] = member_id
            # Standby candidates: a standby (or a warm-up: a member restoring the task) ranks
            # ahead of a member only known to have state on disk; the most caught up first.
            kept = member.current.standby | member.current.warmup
            for task in sorted(kept):
                candidates.setdefault(task, []).append((0, -member.task_offsets.get(task, 0), member_id))
            for task in sorted(member.task_offsets):
                if task not in kept:
                    candidates.setdefault(task, []).append((1, -member.task_offsets[task], member_id))
        # A stable sort on (rank, -offset): ties keep member order, as Kafka's List.sort does.
        self.prev_standby = {task: [m for _, _, m in sorted(c, key=lambda c: c[:2])] for task, c in candidates.items()}

    # ---- quotas --------------------------------------------------------------------------

    def _active_reached(self, count: int) -> None:
        if count == self.active_quota:
            self.active_capacity -= 1
            self.total_active -= count
            self.active_quota = _per_member(self.total_active, self.active_capacity)

    def _total_reached(self, count: int) -> None:
        if count == self.task_quota:
            self.task_capacity -= 1
            self.total -= count
            self.task_quota = _per_member(self.total, self.task_capacity)

    def _give(self, member_id: str, task: TaskId, active: bool) -> None:
        count = self.processes[self.process_of[member_id]].add(member_id, task, active)
        if active:
            self._active_reached(count)
        self._total_reached(count)

    def _count(self, member_id: str) -> int:
        return self.processes[self.process_of[member_id]].counts[member_id]

    def _least_loaded_prev(self, members: list[str] | None, task: TaskId | None) -> str | None:
        """Kafka's findPrevMemberWithLeastLoad: the first candidate, replaced only by one whose
        process *and* member are both less loaded; `task`: skip processes that hold it."""
        best = None
        best_process = best_member = 0.0
        for member_id in members or ():
            process = self.processes.get(self.process_of.get(member_id, ""))
            if process is None or (task is not None and task in process.held):
                continue
            load, count = process.load, process.counts[member_id]
            if best is None or (load < best_process and count < best_member):
                best, best_process, best_member = member_id, load, count
        return best

    def _by_load(self) -> _Queue:
        # Kafka's processIdToState: a HashMap sized by the member count and filled with
        # computeIfAbsent, walked into the queue.
        order = java_hash_order(self.processes, initial_capacity=self.members, computed=True)
        return _Queue((self.processes[pid] for pid in order), _LOAD)

    # ---- active tasks --------------------------------------------------------------------

    def assign_active(self) -> None:
        tasks = sorted(self.active_tasks, key=lambda t: (t[1], t[0]))
        left = []
        for task in tasks:                                            # (a) its previous owner
            prev = self.prev_active.get(task)
            if prev is not None and self._count(prev) < self.active_quota:
                self._give(prev, task, True)
            else:
                left.append(task)
        rest = []
        for task in left:                                             # (b) a standby holder
            prev = self._least_loaded_prev(self.prev_standby.get(task), None)
            if prev is not None and self._count(prev) < self.active_quota:
                self._give(prev, task, True)
            else:
                rest.append(task)
        queue = self._by_load()
        poll, offer = queue.poll, queue.offer
        for task in sorted(rest):                                     # (c) the least loaded
            process = poll()
            count = process.add_to_least_loaded(task, True)
            if count == self.active_quota:
                self._active_reached(count)
            if count == self.task_quota:
                self._total_reached(count)
            offer(process)

    # ---- standby tasks -------------------------------------------------------------------

    def assign_standby(self) -> None:
        later: list[tuple[TaskId, int]] = []
        for task in sorted(self.stateful_tasks, key=lambda t: (t[1], t[0]), reverse=True):
            for i in range(self.standbys):
                prev = self.prev_active.get(task)
                if prev is not None:
                    process = self.processes[self.process_of[prev]]
                    if task not in process.held and process.counts[prev] < self.task_quota:
                        self._give(prev, task, False)
                        continue
                prev = self._least_loaded_prev(self.prev_standby.get(task), task)
                if prev is not None and self._count(prev) < self.task_quota:
                    self._give(prev, task, False)
                    continue
                later.append((task, self.standbys - i))
                break
        queue = self._by_load()
        for task, replicas in sorted(later, reverse=True):
            for _ in range(replicas):
                if not self._standby_to_least_loaded(queue, task):
                    break                       # fewer processes than replicas: fewer standbys

    def _standby_to_least_loaded(self, queue: _Queue, task: TaskId) -> bool:
        """Kafka's assignStandbyToMemberWithLeastLoad: the least loaded process that does not
        hold `task` takes it; the ones passed over go back in the reverse order they came out
        (Kafka recurses)."""
        passed = []
        found = False
        while queue:
            process = queue.poll()
            if task not in process.held:
                self._total_reached(process.add_to_least_loaded(task, False))
                queue.offer(process)
                found = True
                break
            passed.append(process)
        for process in reversed(passed):
            queue.offer(process)
        return found

    def result(self, member_ids: Iterable[str]) -> dict[str, Tasks]:
        out = {}
        for member_id in member_ids:
            process = self.processes[self.process_of[member_id]]
            out[member_id] = Tasks(frozenset(process.active[member_id]), frozenset(process.standby[member_id]))
        return out


def assign_sticky(subtopologies: Iterable[TaskSubtopology], members: Mapping[str, TaskMember],
                  config: TaskAssignmentConfig = TaskAssignmentConfig()) -> dict[str, Tasks]:
    """The target assignment (active and standby tasks) of every member; see the module comment."""
    if not members:
        return {}
    placement = _Placement(subtopologies, members, config)
    placement.assign_active()
    if placement.standbys > 0:
        placement.assign_standby()
    return placement.result(sorted(members))


class StickyTaskAssignor:
    """The `sticky` streams task assignor, Kafka's default (group.streams.assignors)."""

    name = "sticky"

    def assign(self, subtopologies: Iterable[TaskSubtopology], members: Mapping[str, TaskMember],
               config: TaskAssignmentConfig = TaskAssignmentConfig()) -> dict[str, Tasks]:
        """Active, standby and warm-up tasks per member: Kafka's sticky placement, then the
        warm-ups that keep a stateful task where its state is until its new owner caught up."""
        subtopologies = tuple(subtopologies)
        target = assign_sticky(subtopologies, members, config)
        return add_warmups(subtopologies, members, target, config)
