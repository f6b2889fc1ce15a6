"""What a Kafka Streams app pays when its tasks move: state restored from changelogs.

How this works: every stateful task has a changelog whose end grows while the app runs
(``write_records_per_s``, from ``changelog_records`` at the start). Each process (a Kafka
Streams instance, one state directory, named like the lab's member) has some position in
each task's changelog: 0 until it first holds the task; while it holds the task (active,
standby or warm-up) the position moves towards the end at ``restore_records_per_s`` and then
follows it; when it stops holding the task the position stays where it was (the state
directory keeps the store). So a caught-up standby is at the end, a process that ran the
task an hour ago is an hour's writes behind, and a process that never had it is at 0.

When a task becomes active on another process than the one that ran it last, that is a
*moved active task*; its cost is the time to restore what the new process lacks:
``(end - position) / restore_records_per_s`` seconds (zero when a caught-up standby or
warm-up is promoted). The first placement of a task (the app starting) is not a move. The
ledger also counts task-seconds without an active owner after the first placement.

Both lab variants of a streams app feed it: the streams protocol (lab/streams_lab.py) from
the tasks each member holds, the classic-protocol baseline from the ownership timeline the
engine records (``from_timeline``). Pure: times are the caller's virtual milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.lab.scenario import StreamsSettings

Task = tuple[str, int]          # (topic = subtopology, partition)


@dataclass(slots=True)
class _Position:
    at: float                   # records of the changelog this process has, as of `since`
    since: int                  # ms
    holding: int = 0            # how many of the process's roles (active/standby/warm-up) hold it


class RestoreLedger:
    """Changelog positions per process and task, and the cost of each moved active task."""

    def __init__(self, settings: StreamsSettings, stateful: set[str]) -> None:
        self.s = settings
        self.stateful = stateful                          # topics whose tasks have state
        self.positions: dict[tuple[str, Task], _Position] = {}
        self.last_active: dict[Task, str] = {}            # task -> process that ran it last
        self.active_count: dict[Task, int] = {}
        self.unowned_since: dict[Task, int] = {}
        self.moves = 0
        self.restore_ms = 0.0
        self.promotions = 0                               # moves that cost nothing
        self.unowned_task_ms = 0

    def end(self, now: int) -> float:
        return self.s.changelog_records + self.s.write_records_per_s * now / 1000

    def position(self, process: str, task: Task, now: int) -> float:
        pos = self.positions.get((process, task))
        if pos is None:
            return 0.0
        if not pos.holding:
            return pos.at
        return min(self.end(now), pos.at + self.s.restore_records_per_s * (now - pos.since) / 1000)

    def hold(self, process: str, task: Task, now: int, *, active: bool) -> None:
        """``process`` starts holding ``task`` (as active when ``active``)."""
        if active:
            self._active_gained(process, task, now)
        if task[0] not in self.stateful:
            return
        key = (process, task)
        pos = self.positions.get(key)
        if pos is None:
            self.positions[key] = _Position(0.0, now, 1)
        else:
            pos.at, pos.since = self.position(process, task, now), now
            pos.holding += 1

    def release(self, process: str, task: Task, now: int, *, active: bool) -> None:
        """``process`` stops holding ``task`` in one role."""
        if active:
            n = self.active_count[task] = self.active_count.get(task, 1) - 1
            if n == 0:
                self.unowned_since[task] = now
        pos = self.positions.get((process, task))
        if task[0] in self.stateful and pos is not None and pos.holding:
            pos.at, pos.since = self.position(process, task, now), now
            pos.holding -= 1

    def _active_gained(self, process: str, task: Task, now: int) -> None:
        n = self.active_count[task] = self.active_count.get(task, 0) + 1
        since = self.unowned_since.pop(task, None)
        if n == 1 and since is not None:
            self.unowned_task_ms += now - since
        last = self.last_active.get(task)
        self.last_active[task] = process
        if last is None or last == process:
            return
        self.moves += 1
        cost = 0.0
        if task[0] in self.stateful:
            cost = (self.end(now) - self.position(process, task, now)) / self.s.restore_records_per_s * 1000
        self.restore_ms += cost
        if cost == 0:
            self.promotions += 1

    def close(self, now: int) -> None:
        for since in self.unowned_since.values():
            self.unowned_task_ms += now - since
        self.unowned_since.clear()

    def row(self) -> dict[str, float | int]:
        """The cost columns of a group's summary row."""
        return {"tasks_moved": self.moves, "restore_s": round(self.restore_ms / 1000, 3),
                "restore_s_per_move": round(self.restore_ms / 1000 / self.moves, 3) if self.moves else 0.0,
                "standby_promotions": self.promotions}


def from_timeline(settings: StreamsSettings, stateful: set[str],
                  timeline: list[tuple[str, str, int, int, int]], end_ms: int) -> RestoreLedger:
    """The ledger of a run recorded as the engine's ownership timeline ((member, topic,
    partition, from ms, to ms) per holding): every holding is an active task."""
    changes = []
    for name, topic, partition, start, stop in timeline:
        changes.append((start, 1, name, (topic, partition)))
        if stop < end_ms:
            changes.append((stop, 0, name, (topic, partition)))
    ledger = RestoreLedger(settings, stateful)
    for at, gained, name, task in sorted(changes):      # releases before gains at one time
        if gained:
            ledger.hold(name, task, at, active=True)
        else:
            ledger.release(name, task, at, active=True)
    ledger.close(end_ms)
    return ledger
