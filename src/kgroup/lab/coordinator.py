"""The lab's coordinator: the real core shard, hosted as the broker hosts it.

How this works: ``LabCoordinator`` is a ``kgroup.core.host.CoordinatorHost`` over an
in-memory group-metadata log: a request that reaches it (after its link's delay) runs the
handler its ``RequestKind`` has in one table, the Result's records are appended and
replayed, and its replies go back to the member driver, which sends them over the link.
The lab watches what is stored: each committed offset (offset regressions), the group's
generation or epoch (rebalance rounds), and the log's length (compacted into a snapshot's
records past ``LOG_COMPACT_AT``). The core's timers are one event on the loop at the
earliest deadline. A restart drops every parked request and replays the log into a fresh
shard, as a broker does after a crash; a failover does the same, except that for its last
part (the new node loading) requests get COORDINATOR_LOAD_IN_PROGRESS instead of nothing. It also plays the broker's metadata: the topics.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, Callable

from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import GroupError
from kgroup.core.host import CoordinatorHost
from kgroup.core.records import OffsetCommitRecord, Record
from kgroup.core.state import counter_member_ids
from kgroup.core.timers import classic_session_key, consumer_session_key
from kgroup.error_codes import ErrorCode
from kgroup.lab.loop import EngineEvent, EventLoop
from kgroup.lab.metrics import Metrics
from kgroup.lab.process import GROUP_ID
from kgroup.lab.scenario import Scenario

if TYPE_CHECKING:
    from kgroup.lab.member_driver import MemberDriver

LOG_COMPACT_AT = 50_000

CoordinatorFactory = Callable[..., GroupCoordinatorShard]


class RequestKind(IntEnum):
    """The requests a lab member sends its coordinator. (An IntEnum: tables index by it.)"""

    HEARTBEAT = 0
    CONSUMER_GROUP_HEARTBEAT = 1
    JOIN_GROUP = 2
    SYNC_GROUP = 3
    LEAVE_GROUP = 4
    OFFSET_COMMIT = 5


# A JoinGroup or SyncGroup may be parked until the rebalance answers it.
PARKED = frozenset({RequestKind.JOIN_GROUP, RequestKind.SYNC_GROUP})
_COORD_TIMER = EngineEvent.COORD_TIMER


def topic_id(name: str) -> str:
    return f"id-{name}"


class LabCoordinator(CoordinatorHost):
    """The group's coordinator and the broker around it (its log, its topics, its timer)."""

    def __init__(self, scenario: Scenario, loop: EventLoop, metrics: Metrics,
                 factory: CoordinatorFactory = GroupCoordinatorShard) -> None:
        self.loop = loop
        self.metrics = metrics
        self.factory = factory
        self.config: GroupConfig = scenario.coordinator
        self.new_member_id = counter_member_ids()
        self.topics: dict[str, int] = dict(scenario.topics)
        super().__init__(self._new_coordinator(), [])
        self.up = True
        self.loading = False                        # a failover's new node, still replaying the log
        self.timer_at: int | None = None
        self.outstanding: dict[tuple, None] = {}    # parked requests (tokens), failed by a restart
        self.requests = 0
        self.generation = 0
        self.members: MemberDriver | None = None    # where replies go (the engine wires it)

    def _new_coordinator(self) -> GroupCoordinatorShard:
        coord = self.factory(self.config, new_member_id=self.new_member_id)
        handlers = {
            RequestKind.HEARTBEAT: coord.heartbeat,
            RequestKind.CONSUMER_GROUP_HEARTBEAT: coord.consumer_group_heartbeat,
            RequestKind.JOIN_GROUP: coord.join_group,
            RequestKind.SYNC_GROUP: coord.sync_group,
            RequestKind.LEAVE_GROUP: coord.leave_group,
            RequestKind.OFFSET_COMMIT: coord.commit_offsets,
        }
        self._handlers = tuple(handlers[k] for k in RequestKind)
        return coord

    def start(self) -> None:
        """The broker's topics, then a loaded (empty) shard, at time 0."""
        self.apply(self.coordinator.update_topics(self.topic_image(), 0))
        self.apply(self.coordinator.load_complete(0))
        self.reschedule()

    # ---- the broker's metadata ------------------------------------------------------------

    def partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t, n in sorted(self.topics.items()) for p in range(n)]

    def topic_image(self) -> dict[str, tuple[str, int]]:
        return {t: (topic_id(t), n) for t, n in self.topics.items()}

    def add_partitions(self, topic: str, count: int) -> None:
        """The topic grows; a running coordinator hears of it (a restarted one reads it)."""
        self.topics[topic] = count
        if self.up:
            self.apply(self.coordinator.update_topics(self.topic_image(), self.loop.now))
            self.reschedule()

    # ---- requests (EngineEvent.TO_COORD) --------------------------------------------------

    def receive(self, payload: tuple[tuple, Any], t: int) -> None:
        """A request reached the coordinator: its handler answers now or parks it."""
        self.handle_request(*payload)

    def handle_request(self, token: tuple, request: Any) -> None:
        kind = token[2]
        self.requests += 1
        if not self.up:
            if self.loading and kind != RequestKind.LEAVE_GROUP:
                # Another node took the partition over: reachable, but still loading.
                self.members.reply(token, GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            else:
                self.members.refused(token)
            return
        if kind in PARKED:
            self.outstanding[token] = None       # parked until the rebalance answers it
        try:
            self.handle(self._handlers[kind], request, token, self.loop.now)
        except GroupError as exc:
            self.outstanding.pop(token, None)
            self.members.reply(token, exc)
        self.reschedule()

    # ---- the host's hooks -----------------------------------------------------------------

    def stored(self, records: tuple[Record, ...]) -> None:
        metrics = self.metrics
        group_changed = False
        for record in records:
            if type(record) is OffsetCommitRecord:
                if record.value is not None:
                    metrics.committed((record.topic, record.partition), record.value.offset)
            else:
                group_changed = True
        if len(self.log) > LOG_COMPACT_AT:
            self.compact()
        if group_changed:
            self._observe_generation()

    def deliver(self, replies: tuple[tuple[Any, Any], ...]) -> None:
        outstanding = self.outstanding
        reply = self.members.reply
        for token, response in replies:
            if outstanding:
                outstanding.pop(token, None)
            reply(token, response)

    def _observe_generation(self) -> None:
        group = self.coordinator.groups.get(GROUP_ID)
        if group is not None:
            gen = group.generation
        else:
            cgroup = self.coordinator.consumer_groups.get(GROUP_ID)
            gen = cgroup.epoch if cgroup is not None else self.generation
        if gen != self.generation:
            self.metrics.generation(gen, self.generation)
            self.generation = gen

    # ---- timers (EngineEvent.COORD_TIMER) -------------------------------------------------

    def timer(self, payload: None, t: int) -> None:
        """The earliest deadline came: run what is due (if this is still that deadline)."""
        now = self.loop.now
        if self.timer_at == now:
            self.timer_at = None
            if self.up:
                self.expire(now)
            self.reschedule()

    def reschedule(self) -> None:
        """One loop event at the core's earliest deadline (an earlier one replaces it)."""
        if not self.up:
            return
        deadline = self.coordinator.next_deadline()
        if deadline is None:
            return
        now = self.loop.now
        deadline = max(deadline, now)
        if self.timer_at is None or deadline < self.timer_at or self.timer_at < now:
            self.timer_at = deadline
            self.loop.push(deadline, _COORD_TIMER, None)

    # ---- a restart ------------------------------------------------------------------------

    def go_down(self) -> None:
        self.up = False
        self.loading = False
        self.timer_at = None
        # Connections drop: every request parked at the coordinator fails.
        for token in list(self.outstanding):
            self.members.refused(token)
        self.outstanding.clear()

    def start_loading(self) -> None:
        """A failover: another node owns the partition now and answers
        COORDINATOR_LOAD_IN_PROGRESS until it has replayed the log (`come_up`)."""
        self.loading = True

    def come_up(self) -> None:
        """A new coordinator replays the group-metadata log, as after a broker restart."""
        self.reload(self._new_coordinator())
        self.up = True
        self.loading = False
        now = self.loop.now
        self.apply(self.coordinator.update_topics(self.topic_image(), now))
        self.apply(self.coordinator.load_complete(now))
        self.reschedule()

    # ---- what the rest of the lab reads ---------------------------------------------------

    def stable(self) -> bool:
        """Up, and the group Stable."""
        if not self.up:
            return False
        group = self.coordinator.groups.get(GROUP_ID)
        if group is not None:
            return group.state.value == "Stable"
        cgroup = self.coordinator.consumer_groups.get(GROUP_ID)
        return cgroup is not None and cgroup.state().value == "Stable"

    def is_member(self, member_id: str) -> bool:
        """Whether the group counts ``member_id`` as one of its members now."""
        group = self.coordinator.groups.get(GROUP_ID)
        if group is not None and member_id in group.members:
            return True
        cgroup = self.coordinator.consumer_groups.get(GROUP_ID)
        return cgroup is not None and member_id in cgroup.members

    def session_deadline(self, running: set[str]) -> int | None:
        """The earliest session deadline of a group member not in ``running``."""
        coord = self.coordinator
        timers = coord.shard.timers
        deadlines = []
        group = coord.groups.get(GROUP_ID)
        if group is not None:
            deadlines += [timers.deadline(classic_session_key(GROUP_ID, m)) for m in group.members if m not in running]
        cgroup = coord.consumer_groups.get(GROUP_ID)
        if cgroup is not None:
            deadlines += [timers.deadline(consumer_session_key(GROUP_ID, m)) for m in cgroup.members if m not in running]
        deadlines = [d for d in deadlines if d is not None]
        return min(deadlines) if deadlines else None
