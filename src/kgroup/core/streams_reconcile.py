"""How a streams group member moves to its target assignment (Kafka 4.4's streams
CurrentAssignmentBuilder), one heartbeat at a time.

How this works. A member holds active, standby and warm-up tasks; its target says which it
should hold. Each step compares the two per kind of task:

- tasks in both stay (an active task keeps the epoch at which it was assigned);
- tasks it holds that the target drops are *pending revocation*: the member keeps its epoch
  and stays UNREVOKED_TASKS until a heartbeat's owned tasks no longer show them;
- tasks the target adds are granted only when nothing blocks them (else UNRELEASED_TASKS, at
  the target epoch): an active task while any member still holds it active (one owner, ever),
  or while another member of this process holds it as a standby or warm-up (a process runs a
  task once); a standby or warm-up while this process holds the task otherwise;
- a role change of the member's own task needs no round trip: an active task demoted to a
  standby keeps its state store (the active part is still revoked), a standby becomes a
  warm-up or back at once, and a standby or warm-up promoted to active stays until the active
  task is granted, then turns into it in place (KAFKA-9501: the client recycles the store).

The member reaches the target epoch as soon as it has nothing left to revoke; it is STABLE
when nothing it wants is held elsewhere. Every step records the epoch it leaves as the
previous epoch, even a step that keeps it (told to revoke, still waiting for a task), as
Kafka 4.4 does: only a heartbeat at that previous epoch is forgiven as a lost answer
(differential scenario previous_epoch_of_a_revoking_member). `MEMBER_TRANSITIONS` is the table of those moves;
`reconcile` checks every step against it. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kgroup.core.errors import IllegalGroupTransition
from kgroup.core.streams_records import (
    StreamsCurrentValue,
    StreamsMemberState,
    TaskId,
    TaskTuple,
    active_epochs,
    active_tasks,
    task_ids,
)

_M = StreamsMemberState


class TaskEpochMove(Enum):
    KEEP = "keep"              # it still owes tasks back: no new epoch until it revokes them
    TO_TARGET = "target"       # it reaches the target assignment's epoch
    NEXT = "next"              # it revoked, and a newer target takes more: one epoch on


# source state -> next state -> what the step does to the epoch. Every state can reach every
# state: a new target can take tasks away from a member whatever it was doing; what the table
# rules out is the epoch going the wrong way.
MEMBER_TRANSITIONS: dict[StreamsMemberState, dict[StreamsMemberState, frozenset[TaskEpochMove]]] = {
    _M.STABLE: {_M.STABLE: frozenset({TaskEpochMove.TO_TARGET}),
                _M.UNRELEASED_TASKS: frozenset({TaskEpochMove.TO_TARGET}),
                _M.UNREVOKED_TASKS: frozenset({TaskEpochMove.KEEP})},
    _M.UNRELEASED_TASKS: {_M.STABLE: frozenset({TaskEpochMove.TO_TARGET}),
                          _M.UNRELEASED_TASKS: frozenset({TaskEpochMove.TO_TARGET}),
                          _M.UNREVOKED_TASKS: frozenset({TaskEpochMove.KEEP})},
    _M.UNREVOKED_TASKS: {_M.STABLE: frozenset({TaskEpochMove.TO_TARGET}),
                         _M.UNRELEASED_TASKS: frozenset({TaskEpochMove.TO_TARGET}),
                         _M.UNREVOKED_TASKS: frozenset({TaskEpochMove.KEEP, TaskEpochMove.NEXT})},
}


@dataclass(frozen=True, slots=True)
class Owned:
    """The tasks a member reports it holds (a heartbeat's ActiveTasks/StandbyTasks/WarmupTasks)."""

    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    warmup: frozenset[TaskId] = frozenset()


@dataclass(slots=True)
class TaskHolders:
    """Which processes hold each task now (assigned or pending revocation), group-wide: the
    coordinator keeps this index from the members' current assignments."""

    active: dict[TaskId, str] = field(default_factory=dict)
    standby: dict[TaskId, set[str]] = field(default_factory=dict)
    warmup: dict[TaskId, set[str]] = field(default_factory=dict)

    def add(self, process_id: str, value: StreamsCurrentValue) -> None:
        for s, p, _ in (*value.active, *value.pending_active):
            self.active[(s, p)] = process_id
        for task in (*value.standby, *value.pending_standby):
            self.standby.setdefault(task, set()).add(process_id)
        for task in (*value.warmup, *value.pending_warmup):
            self.warmup.setdefault(task, set()).add(process_id)

    def remove(self, process_id: str, value: StreamsCurrentValue) -> None:
        for s, p, _ in (*value.active, *value.pending_active):
            if self.active.get((s, p)) == process_id:
                del self.active[(s, p)]
        for index, tasks in ((self.standby, (*value.standby, *value.pending_standby)),
                             (self.warmup, (*value.warmup, *value.pending_warmup))):
            for task in tasks:
                holders = index.get(task)
                if holders is not None:
                    holders.discard(process_id)
                    if not holders:
                        del index[task]


class _Step:
    """One reconciliation step of one member (the computation of Kafka's computeNextAssignment)."""

    def __init__(self, process_id: str, current: StreamsCurrentValue, target: TaskTuple, target_epoch: int,
                 holders: TaskHolders, owned: Owned | None) -> None:
        self.process = process_id
        self.current = current
        self.target = target
        self.target_epoch = target_epoch
        self.holders = holders
        self.owned = owned

    def not_released(self, active: set[TaskId], standby: set[TaskId], warmup: set[TaskId]) -> bool:
        """Without a report we cannot tell the tasks went: they count as still held."""
        owned = self.owned
        if owned is None:
            return True
        return bool(owned.active & active or owned.standby & standby or owned.warmup & warmup)

    def _runs_here(self, task: TaskId) -> bool:
        return self.holders.active.get(task) == self.process

    def _other_member_here(self, index: dict[TaskId, set[str]], mine: set[TaskId], task: TaskId) -> bool:
        return self.process in index.get(task, ()) and task not in mine

    def next(self, member_epoch: int) -> StreamsCurrentValue:
        cur, target = self.current, self.target
        held_active = active_epochs(cur.active)
        held_standby, held_warmup = set(cur.standby), set(cur.warmup)
        want_active, want_standby, want_warmup = set(target.active), set(target.standby), set(target.warmup)
        here_active = self._runs_here

        # Per kind: what stays, what goes, what can be granted now.
        keep_a = {t: e for t, e in held_active.items() if t in want_active}
        revoke_a = {t: e for t, e in held_active.items() if t not in want_active}
        pend_a: dict[TaskId, int] = {}
        unreleased = False
        for t in sorted(want_active - set(keep_a)):
            if (t in self.holders.active or self._other_member_here(self.holders.standby, held_standby, t)
                    or self._other_member_here(self.holders.warmup, held_warmup, t)):
                unreleased = True
            else:
                pend_a[t] = self.target_epoch
        keep_s, revoke_s = held_standby & want_standby, held_standby - want_standby
        pend_s = set()
        for t in sorted(want_standby - keep_s):
            if ((here_active(t) and t not in held_active) or self.process in self.holders.standby.get(t, ())
                    or self._other_member_here(self.holders.warmup, held_warmup, t)):
                unreleased = True
            else:
                pend_s.add(t)
        keep_w, revoke_w = held_warmup & want_warmup, held_warmup - want_warmup
        pend_w = set()
        for t in sorted(want_warmup - keep_w):
            if (here_active(t) or self._other_member_here(self.holders.standby, held_standby, t)
                    or self.process in self.holders.warmup.get(t, ())):
                unreleased = True
            else:
                pend_w.add(t)

        # Role changes of its own tasks, at once: demotion to standby, standby <-> warm-up.
        for t in held_active:
            if t in pend_s:
                pend_s.discard(t)
                keep_s.add(t)
        for t in held_standby:
            if t in pend_w:
                pend_w.discard(t)
                keep_w.add(t)
                revoke_s.discard(t)
        for t in held_warmup:
            if t in pend_s:
                pend_s.discard(t)
                keep_s.add(t)
                revoke_w.discard(t)
        # Promotions to active: the standby or warm-up needs no revocation, and stays until
        # the active task is granted (then the client turns it into the active task).
        revoke_s -= want_active
        revoke_w -= want_active
        must_revoke = bool(revoke_a or revoke_s or revoke_w) and self.not_released(set(revoke_a), revoke_s, revoke_w)
        for held, keep in ((held_standby, keep_s), (held_warmup, keep_w)):
            for t in held:
                promoted_now = not must_revoke and t in pend_a
                if t in want_active and not promoted_now:
                    keep.add(t)

        if must_revoke:
            state, epoch = _M.UNREVOKED_TASKS, member_epoch
            assigned_a, assigned_s, assigned_w = keep_a, keep_s, keep_w
            pending = (revoke_a, revoke_s, revoke_w)
        else:
            state = _M.UNRELEASED_TASKS if unreleased else _M.STABLE
            epoch = self.target_epoch
            assigned_a, assigned_s, assigned_w = {**keep_a, **pend_a}, keep_s | pend_s, keep_w | pend_w
            pending = ({}, set(), set())
        # Every step records the epoch it leaves as the previous one, even a step that keeps
        # the epoch (told to revoke, still waiting for a task), as Kafka 4.4's
        # updateMemberEpoch does: a heartbeat at the epoch before that is fenced.
        return StreamsCurrentValue(epoch, cur.member_epoch, state, active_tasks(assigned_a), task_ids(assigned_s),
                                   task_ids(assigned_w), active_tasks(pending[0]), task_ids(pending[1]),
                                   task_ids(pending[2]))


def reconcile(process_id: str, current: StreamsCurrentValue, target: TaskTuple, target_epoch: int,
              holders: TaskHolders, owned: Owned | None) -> StreamsCurrentValue:
    """The member's next step towards `target` (Kafka's CurrentAssignmentBuilder.build):
    `current` unchanged when it cannot move."""
    step = _Step(process_id, current, target, target_epoch, holders, owned)
    if current.state is _M.STABLE:
        if current.member_epoch == target_epoch:
            return current
        nxt = step.next(current.member_epoch)
    elif current.state is _M.UNREVOKED_TASKS:
        pending = current.pending()
        if step.not_released(set(pending.active), set(pending.standby), set(pending.warmup)):
            return current
        nxt = step.next(current.member_epoch + 1)
    else:
        nxt = step.next(current.member_epoch)
    check_member_transition(current, nxt, target_epoch)
    return current if nxt == current else nxt


def check_member_transition(current: StreamsCurrentValue, nxt: StreamsCurrentValue, target_epoch: int) -> None:
    """Raise IllegalGroupTransition unless `current` -> `nxt` is a move the table allows."""
    moves = MEMBER_TRANSITIONS[current.state].get(nxt.state, frozenset())
    allowed = {TaskEpochMove.KEEP: current.member_epoch, TaskEpochMove.TO_TARGET: target_epoch,
               TaskEpochMove.NEXT: current.member_epoch + 1}
    if not any(nxt.member_epoch == allowed[m] for m in moves):
        raise IllegalGroupTransition(f"streams member {current.state.value}@{current.member_epoch} -> "
                                     f"{nxt.state.value}@{nxt.member_epoch} (target epoch {target_epoch})")


def is_converged(current: StreamsCurrentValue, target_epoch: int) -> bool:
    """At the target epoch with nothing to revoke or to wait for (Kafka's isReconciledTo)."""
    return current.member_epoch == target_epoch and current.state is _M.STABLE

