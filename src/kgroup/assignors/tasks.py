"""Balanced, sticky, cooperative assignment of named tasks over the members of a group.

The leader of a ``kgroup-tasks`` group (``kgroup.client.TaskAssignment``) runs this. Each
member reports a ``TaskClaim``: the tasks of its last assignment, the generation of that
assignment, and whether it still runs them (a cooperative member keeps running its tasks
through a rebalance; an eager one stops them before it rejoins).

How this works, in four steps:

1. Owners: a task's previous owner is the member that still runs it, else the claimant with
   the newest generation (a claim from an older generation is stale: the task moved since).
2. Quotas: T tasks over N members gives each floor(T/N), and T mod N members one more; the
   extra slots go to the members that own the most, so the fewest tasks have to move.
3. Stickiness: each member keeps up to its quota of the tasks it owns; the rest, and tasks
   nobody owns, fill the members below quota, in member-id order.
4. Cooperation: a task given to a member other than the one still running it is withheld
   this round. The runner sees the task missing from its assignment, stops it and rejoins;
   in that next round nobody runs it and it goes where step 3 puts it. So no task ever has
   two members running it, and when members come and go only the tasks that must move do:
   a member joining a balanced group takes at most ceil(T/(N+1)), a member leaving hands
   on exactly its own.

Pure: the result depends only on the arguments (members and tasks are sorted, never iterated
in set order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TaskClaim:
    """What a member reports about its previous tasks."""

    tasks: tuple[str, ...] = ()
    generation: int = -1
    running: bool = False


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """The leader's decision: tasks per member (sorted), and tasks withheld this round
    because the member running them must stop them first."""

    assignments: Mapping[str, tuple[str, ...]]
    withheld: tuple[str, ...] = ()


def assign_tasks(tasks: Iterable[str], members: Mapping[str, TaskClaim]) -> TaskPlan:
    """Spread ``tasks`` over ``members`` (member id -> claim); see the module comment."""
    all_tasks = sorted(set(tasks))
    ids = sorted(members)
    if not ids:
        return TaskPlan({})
    # 1. Owners: the member running a task, else the newest claim; ties by member id.
    known = set(all_tasks)
    best: dict[str, tuple[int, int, str]] = {}
    running: dict[str, str] = {}
    for mid in ids:
        claim = members[mid]
        for task in claim.tasks:
            if task not in known:
                continue
            if claim.running and task not in running:
                running[task] = mid
            rank = (int(claim.running), claim.generation, mid)
            held = best.get(task)
            if held is None or rank[:2] > held[:2]:
                best[task] = rank
    owned: dict[str, list[str]] = {mid: [] for mid in ids}
    for task in all_tasks:
        if task in best:
            owned[best[task][2]].append(task)
    # 2. Quotas: one more for the T mod N members that own the most.
    base, extra = divmod(len(all_tasks), len(ids))
    by_ownership = sorted(ids, key=lambda m: (-len(owned[m]), m))
    quota = {mid: base + (1 if i < extra else 0) for i, mid in enumerate(by_ownership)}
    # 3. Keep what is owned up to the quota; deal the rest to members below it.
    result: dict[str, list[str]] = {mid: owned[mid][:quota[mid]] for mid in ids}
    kept = {task for mid in ids for task in result[mid]}
    pool = [task for task in all_tasks if task not in kept]
    pos = 0
    for mid in ids:
        need = quota[mid] - len(result[mid])
        if need > 0:
            result[mid].extend(pool[pos:pos + need])
            pos += need
    # 4. A task still running elsewhere waits for its runner to let go.
    withheld: list[str] = []
    for mid in ids:
        mine = result[mid]
        moving = [t for t in mine if running.get(t, mid) != mid]
        if moving:
            withheld.extend(moving)
            result[mid] = [t for t in mine if running.get(t, mid) == mid]
    return TaskPlan({mid: tuple(sorted(result[mid])) for mid in ids}, tuple(sorted(withheld)))
