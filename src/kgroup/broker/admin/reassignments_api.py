"""Partition moves and preferred leaders: AlterPartitionReassignments,
ListPartitionReassignments and ElectLeaders (admin/apis.py has the versions served).

How this works: in a kgroup cluster the nodes share one data dir, so a partition's
"replicas" are the node that owns it (cluster/ownership.py); moving a partition is moving
that ownership, the same clean hand-over the cluster does for a node coming back to its
preferred units (the holder stops accepting, lets in-flight writes finish, releases; the
target takes the next ownership epoch, so the leader epoch rises by one). A move is kept
in the data dir's moves.json, so it outlives restarts and every node sees it.

- AlterPartitionReassignments: a target list [n, ...] moves the partition's leadership
  to n (its first replica, as Kafka's preferred leader is); the answer does not wait for
  the move. Checked as Kafka 4.4 checks it: an unknown topic or partition is
  UNKNOWN_TOPIC_OR_PARTITION, an empty list, a broker named twice or one that is not
  registered INVALID_REPLICA_ASSIGNMENT (replicas.py's words). The nodes share the data,
  so a replication factor is what Metadata reports, not a copy count: a target of another
  length than the topic's factor is INVALID_REPLICATION_FACTOR — with v1's
  allow_replication_factor_change false in Kafka's words, else with kgroup's (it keeps a
  topic's factor; Kafka would add or drop copies). Null replicas cancel a move still under
  way (back to where it came from), or answer NO_REASSIGNMENT_IN_PROGRESS.
- ListPartitionReassignments: the moves under way — a partition whose move names a node
  that does not lead it yet — with replicas [target, source], adding [target], removing
  [source], as Kafka lists a reassignment from one replica to another.
- ElectLeaders PREFERRED: each partition named (every partition, for null) goes back to
  its preferred node (placement.py) and the answer waits, up to the request's timeout,
  until it leads there (ELECTION_NOT_NEEDED where it already does; PREFERRED_LEADER_NOT_
  AVAILABLE when that node is down or the move does not finish in time). UNCLEAN: with a
  leader, ELECTION_NOT_NEEDED, as Kafka answers for a partition that has one; without one
  (its node down, being taken over), the cluster is already choosing one:
  ELIGIBLE_LEADERS_NOT_AVAILABLE. For null, Kafka lists every topic and only the
  partitions it elected.

On a single broker every move names the broker itself: a no-op, as with Kafka's one broker.

As Kafka's controller does, a request with a timeout of 0 or less (a deadline already
passed) is REQUEST_TIMED_OUT for every partition it names (an empty one is answered at
once), and ElectLeaders of an unknown election type INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from kgroup.broker.data.context import DataContext, log
from kgroup.broker.data.replicas import assignment_problem
from kgroup.error_codes import ErrorCode
from kgroup.storage.data_dir import TopicMeta
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item

E = ErrorCode
PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."
# How often an ElectLeaders answer looks whether its moves are done.
ELECTION_POLL_S = 0.02
# An election waits at most this long whatever the request's timeout says.
MAX_ELECTION_WAIT_S = 30.0


def reassignments_failed(cls: type, request: Any, code: ErrorCode, message: str | None = None) -> Any:
    """An AlterPartitionReassignments answer of `code` for every partition named."""
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partitions")
    return build(cls, throttle_time=0, error_code=code, error_message=message, responses=tuple(
        build(topic_cls, name=t.name, partitions=tuple(
            build(part_cls, partition_index=int(p.partition_index), error_code=code, error_message=message)
            for p in t.partitions))
        for t in request.topics))


def elections_failed(cls: type, request: Any, code: ErrorCode, message: str | None = None) -> Any:
    """An ElectLeaders answer of `code` (and `message`) for every partition named."""
    result_cls = item(cls, "replica_election_results")
    part_cls = item(result_cls, "partition_result")
    return build(cls, throttle_time=0, error_code=code, replica_election_results=tuple(
        build(result_cls, topic=t.topic, partition_result=tuple(
            build(part_cls, partition_id=int(p), error_code=code, error_message=message) for p in t.partitions))
        for t in request.topic_partitions or ()))


def _expired(request: Any) -> bool:
    """Whether the request's deadline has passed before it starts (a timeout of 0 or less)."""
    timeout = get(request, "timeout", None)
    return timeout is not None and timeout.total_seconds() <= 0


class Mover(Protocol):
    """What moving partitions needs of the cluster (cluster/node_view.py's NodeView)."""

    nodes: list[int]

    def leader(self, slot: int) -> int | None: ...
    def live(self) -> set[int]: ...
    def preferred(self, slot: int) -> int: ...
    def moved_to(self, slot: int) -> int | None: ...
    def move(self, slot: int, node: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Pending:
    """A move this node asked for: to `target`, from `source` (None: nobody led it)."""

    target: int
    source: int | None


class ReassignmentsApi:
    """The three APIs over the data path's context and the cluster's moves."""

    def __init__(self, ctx: DataContext, mover: Mover) -> None:
        self.ctx = ctx
        self.mover = mover
        # Moves asked here, until done: a move back to a preferred node leaves no trace in
        # moves.json, and a cancel needs the source.
        self.pending: dict[int, Pending] = {}

    # ---- AlterPartitionReassignments --------------------------------------------------------

    async def alter_partition_reassignments(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        topic_cls = item(cls, "responses")
        part_cls = item(topic_cls, "partitions")
        allow_change = bool(get(request, "allow_replication_factor_change", True))
        if request.topics and _expired(request):
            return reassignments_failed(cls, request, E.REQUEST_TIMED_OUT)
        topics = self.ctx.data.topics()
        responses = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                code, message = self._reassign(topics.get(t.name), t.name, int(p.partition_index), p.replicas,
                                               allow_change)
                parts.append(build(part_cls, partition_index=int(p.partition_index), error_code=code,
                                   error_message=message))
            responses.append(build(topic_cls, name=t.name, partitions=tuple(parts)))
        # (Kafka answers an empty request with an empty message, not a null one.)
        return build(cls, throttle_time=0, allow_replication_factor_change=allow_change, error_code=E.NONE,
                     error_message="" if not responses else None, responses=tuple(responses))

    def _reassign(self, meta: TopicMeta | None, name: str, index: int, replicas: Any,
                  allow_change: bool) -> tuple[ErrorCode, str | None]:
        """One partition's reassignment: (error, message)."""
        if meta is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
        if not 0 <= index < min(meta.partitions, len(meta.slots)):
            return E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}."
        slot = meta.slots[index]
        if replicas is None:
            return self._cancel(slot)
        target = [int(r) for r in replicas]
        problem = assignment_problem(target, self.mover.nodes)
        if problem is not None:
            return E.INVALID_REPLICA_ASSIGNMENT, problem
        factor = max(1, meta.replication_factor)
        if len(target) != factor:
            if not allow_change:
                return E.INVALID_REPLICATION_FACTOR, (f"The replication factor is changed from {factor} to "
                                                      f"{len(target)} but allowReplicationFactorChange is false")
            return E.INVALID_REPLICATION_FACTOR, (f"kgroup keeps a topic's replication factor ({factor} for "
                                                  f"{name}): its nodes share one data dir, there are no copies "
                                                  "to add or drop; name the new leader first in a list of "
                                                  f"{factor}")
        self._move(slot, target[0])
        log.info("reassigning %s-%d to node %d", name, index, target[0])
        return E.NONE, None

    def _cancel(self, slot: int) -> tuple[ErrorCode, str | None]:
        target = self._in_flight(slot)
        if target is None:
            return E.NO_REASSIGNMENT_IN_PROGRESS, None
        source = self.pending.get(slot, Pending(target, None)).source
        self.pending.pop(slot, None)
        self.mover.move(slot, source if source is not None else self.mover.preferred(slot))
        return E.NONE, None

    def _move(self, slot: int, node: int) -> None:
        current = self.mover.leader(slot)
        if current != node:
            self.pending[slot] = Pending(node, current)
        self.mover.move(slot, node)

    def _in_flight(self, slot: int) -> int | None:
        """The node unit `slot` is on its way to, or None (no move, or it is done)."""
        mine = self.pending.get(slot)
        target = mine.target if mine is not None else self.mover.moved_to(slot)
        if target is None or self.mover.leader(slot) == target:
            self.pending.pop(slot, None)
            return None
        return target

    # ---- ListPartitionReassignments ---------------------------------------------------------

    async def list_partition_reassignments(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        topics = self.ctx.data.topics()
        if request.topics is None:
            wanted = {name: range(meta.partitions) for name, meta in sorted(topics.items())}
        else:
            wanted = {t.name: [int(p) for p in t.partition_indexes] for t in request.topics if t.name in topics}
        listed = []
        for name, indexes in wanted.items():
            meta = topics[name]
            parts = []
            for p in indexes:
                if not 0 <= p < len(meta.slots):
                    continue
                target = self._in_flight(meta.slots[p])
                if target is None:
                    continue
                source = self.mover.leader(meta.slots[p])
                removing = (source,) if source is not None else ()
                parts.append(build(part_cls, partition_index=p, replicas=(target, *removing),
                                   adding_replicas=(target,), removing_replicas=removing))
            if parts:
                listed.append(build(topic_cls, name=name, partitions=tuple(parts)))
        return build(cls, throttle_time=0, error_code=E.NONE, error_message=None, topics=tuple(listed))

    # ---- ElectLeaders -----------------------------------------------------------------------

    async def elect_leaders(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "replica_election_results")
        part_cls = item(result_cls, "partition_result")
        kind = int(get(request, "election_type", PREFERRED))
        if request.topic_partitions != () and _expired(request):
            return elections_failed(cls, request, E.REQUEST_TIMED_OUT)
        if kind not in (PREFERRED, UNCLEAN):
            return elections_failed(cls, request, E.INVALID_REQUEST)
        topics = self.ctx.data.topics()
        every = request.topic_partitions is None
        if every:
            asked = [(name, list(range(meta.partitions))) for name, meta in sorted(topics.items())]
        else:
            asked = [(t.topic, [int(p) for p in t.partitions]) for t in request.topic_partitions]
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        waiting: dict[tuple[str, int], int] = {}
        for name, indexes in asked:
            meta = topics.get(name)
            for p in indexes:
                answers[(name, p)] = self._elect(meta, name, p, kind, waiting)
        await self._await_moves(waiting, answers, request)
        results = []
        for name, indexes in asked:
            parts = [build(part_cls, partition_id=p, error_code=answers[(name, p)][0],
                           error_message=answers[(name, p)][1])
                     for p in dict.fromkeys(indexes)
                     if not (every and answers[(name, p)][0] == E.ELECTION_NOT_NEEDED)]
            results.append(build(result_cls, topic=name, partition_result=tuple(parts)))
        return build(cls, throttle_time=0, error_code=E.NONE, replica_election_results=tuple(results))

    def _elect(self, meta: TopicMeta | None, name: str, index: int, kind: int,
               waiting: dict[tuple[str, int], int]) -> tuple[ErrorCode, str | None]:
        """One partition's election: its answer, or NONE with the partition put in
        `waiting` (slot) until its move is done."""
        if meta is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}"
        if not 0 <= index < min(meta.partitions, len(meta.slots)):
            return E.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{index}"
        slot = meta.slots[index]
        leader = self.mover.leader(slot)
        if kind == UNCLEAN:
            if leader is not None:
                return E.ELECTION_NOT_NEEDED, NOT_NEEDED
            return E.ELIGIBLE_LEADERS_NOT_AVAILABLE, (f"{name}-{index} has no leader right now: the cluster "
                                                      "is choosing one (kgroup's nodes share the data)")
        preferred = self.mover.preferred(slot)
        if leader == preferred and self.mover.moved_to(slot) in (None, preferred):
            return E.ELECTION_NOT_NEEDED, NOT_NEEDED
        if preferred not in self.mover.live():
            return E.PREFERRED_LEADER_NOT_AVAILABLE, (f"Failed to elect leader for partition {name}-{index} "
                                                      "under strategy PreferredReplicaPartitionLeaderElectionStrategy")
        self._move(slot, preferred)
        waiting[(name, index)] = slot
        log.info("electing node %d, the preferred leader of %s-%d", preferred, name, index)
        return E.NONE, None

    async def _await_moves(self, waiting: dict[tuple[str, int], int],
                           answers: dict[tuple[str, int], tuple[ErrorCode, str | None]], request: Any) -> None:
        """Wait until every elected partition leads on its preferred node, or the request's
        timeout; a partition still moving then is PREFERRED_LEADER_NOT_AVAILABLE."""
        timeout = get(request, "timeout", None)
        wait_s = min(timeout.total_seconds() if timeout is not None else MAX_ELECTION_WAIT_S, MAX_ELECTION_WAIT_S)
        deadline = time.monotonic() + max(wait_s, 0.0)
        while waiting:
            for key, slot in list(waiting.items()):
                if self.mover.leader(slot) == self.mover.preferred(slot):
                    del waiting[key]
            if not waiting or time.monotonic() >= deadline:
                break
            await asyncio.sleep(ELECTION_POLL_S)
        for (name, index) in waiting:
            answers[(name, index)] = (E.PREFERRED_LEADER_NOT_AVAILABLE,
                                      f"{name}-{index} was still moving to its preferred node when the "
                                      "request timed out")
