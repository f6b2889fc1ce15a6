"""Named tasks spread over whoever is alive, moving as few as possible ("spread these 40
jobs over my workers").

How this works: a ``Membership`` of protocol type ``kgroup-tasks`` (bytes in
``assignors.task_protocol``), rebalancing cooperatively. Each member's JoinGroup metadata
claims the tasks it runs (or, after losing them, the ones it ran) with the generation they
were assigned in, so whichever member leads can keep tasks where they are
(``assignors.tasks``: balanced, sticky; a task another member still runs is withheld until
that member lets go). When an assignment arrives a member stops what it no longer has
(``on_revoked``), starts what it newly has (``on_assigned``), and, if it stopped anything,
rejoins at once so the leader can hand those tasks on: one round to let go, one to take
over, and no task ever runs on two members. A member that closes stops everything and
leaves; one that is lost (fenced, or the coordinator unheard for nearly a session) stops
everything through ``on_lost`` (``on_revoked`` when not given).

The leader assigns its own ``tasks``: give every worker the same list. ``set_tasks`` changes
a member's list and starts a rebalance.

    async with TaskAssignment("workers", [f"job-{i}" for i in range(40)],
                              {"bootstrap.servers": "127.0.0.1:9092"},
                              on_assigned=start_jobs, on_revoked=stop_jobs) as tasks:
        await tasks.wait_assigned()
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kgroup.assignors import COOPERATIVE
from kgroup.assignors.task_protocol import (
    PROTOCOL_TYPE,
    TaskProtocolError,
    claim_protocols,
    decode_claim,
    decode_tasks,
    encode_tasks,
)
from kgroup.assignors.tasks import TaskClaim, assign_tasks

from .membership import GroupMember, Membership, MembershipHelper, run_callback

__all__ = ["TaskAssignment"]

log = logging.getLogger("kgroup.client.task_assignment")

TaskCallback = Callable[[frozenset[str]], Any]


class TaskAssignment(MembershipHelper):
    """This worker's share of ``tasks`` in ``group``; see the module comment."""

    def __init__(self, group: str, tasks: Iterable[str], config: Mapping[str, Any] | None = None,
                 /, *, on_assigned: TaskCallback | None = None,
                 on_revoked: TaskCallback | None = None, on_lost: TaskCallback | None = None,
                 **settings: Any) -> None:
        self.all_tasks = _task_list(tasks)
        self.tasks: frozenset[str] = frozenset()
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._on_lost = on_lost
        self.membership = Membership(
            {**(config or {}), "group.id": group}, protocol_type=PROTOCOL_TYPE,
            protocols=claim_protocols(None, None, -1), assign=self._assign,
            on_assigned=self._assigned, on_revoked=self._revoked, on_lost=self._lost,
            rebalance=COOPERATIVE, metadata_for=claim_protocols, **settings)

    def set_tasks(self, tasks: Iterable[str]) -> None:
        """Assign these tasks from now on (when this member leads) and rebalance."""
        self.all_tasks = _task_list(tasks)
        self.membership.rejoin("the task list changed")

    async def wait_assigned(self, timeout: float | None = None) -> frozenset[str]:
        """This member's tasks, once it has had an assignment."""
        await self.membership.wait_assigned(timeout)
        return self.tasks

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> None:
        """Wait until ``predicate()`` holds, re-checked after every change of assignment."""
        await self.membership.wait_for(predicate, timeout)

    # -- the membership's callbacks ------------------------------------------------------

    def _assign(self, members: list[GroupMember]) -> dict[str, bytes]:
        claims = {}
        for m in members:
            try:
                claims[m.member_id] = decode_claim(m.metadata)
            except TaskProtocolError as exc:
                log.warning("group %r: member %s sent no task claim (%s); it starts afresh",
                            self.membership.config.group_id, m.member_id, exc)
                claims[m.member_id] = TaskClaim()
        plan = assign_tasks(self.all_tasks, claims)
        return {mid: encode_tasks(tasks) for mid, tasks in plan.assignments.items()}

    async def _assigned(self, assignment: bytes, generation: int) -> None:
        try:
            new = frozenset(decode_tasks(assignment))
        except TaskProtocolError as exc:
            log.error("group %r: unreadable task assignment in generation %d: %s",
                      self.membership.config.group_id, generation, exc)
            new = frozenset()
        revoked = self.tasks - new
        added = new - self.tasks
        if revoked:
            self.tasks = self.tasks - revoked
            await run_callback("on_revoked", self._on_revoked, revoked)
            # Let the leader hand them on now that they stopped here.
            self.membership.rejoin("tasks were revoked: second round")
        if added:
            self.tasks = self.tasks | added
            await run_callback("on_assigned", self._on_assigned, added)

    async def _revoked(self) -> None:
        gone, self.tasks = self.tasks, frozenset()
        if gone:
            await run_callback("on_revoked", self._on_revoked, gone)

    async def _lost(self) -> None:
        gone, self.tasks = self.tasks, frozenset()
        if gone:
            await run_callback("on_lost", self._on_lost or self._on_revoked, gone)


def _task_list(tasks: Iterable[str]) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(str(t) for t in tasks))
    if any(not t for t in out):
        raise ValueError("task names must not be empty")
    return out
