"""Group mode: a streaming query as one member of a consumer group.

How this works: the query's stream reader (in Spark's driver-side Python process for the
query) runs kgroup's ``Consumer`` on a ``LoopThread``, subscribed with the query's
group.id, so the member joins, heartbeats and rebalances like any consumer — classic
protocol by default, KIP-848 with ``group.protocol=consumer``, static with
``group.instance.id``. The consumer itself never fetches: every partition is paused the
moment it is assigned, because Spark's tasks read the records. A ticker on the loop polls
the consumer (the member's liveness for max.poll.interval.ms) and retries commits the group
refused while it was rebalancing.

What the planner learns from here (``view``): the partitions the member owns, and which of
them are *continuing* — owned without interruption since the planner last put them in a
micro-batch, so the position in Spark's start offset is ours to continue from. Any other
owned partition is *new*: it resumes from the group's committed offset.

Commits: when a micro-batch is known to be complete (``completed``), the end offsets of
partitions still owned since it was planned are committed with the member's generation
(or member epoch). A partition being revoked stays committable until its revocation
callback returns, and that callback waits (boundedly) for the micro-batch in flight, so a
partition handed over gracefully — another query joins, this one is stopped while idle —
is committed exactly where this query stopped reading it. A partition *lost* (session
expired, fenced) is never committed: it already belongs to someone else.

Delivery guarantee: at least once. A partition changes hands at the offset the group has
committed for it, and a query commits a partition only up to the end of a micro-batch that
has finished, so no record is skipped (unless failOnDataLoss=false and retention deleted
it before anyone read it). Duplicates: a graceful hand-over — another query or consumer
joins or leaves, or the group rebalances for any other reason while this query runs —
waits for the micro-batch in flight and commits it before the partition moves, so it
duplicates nothing. A record is read twice only when a query lets go of a partition with
a micro-batch not yet committed: the query is stopped or crashes, its member expires or
is fenced, or a revocation waits longer than half of max.poll.interval.ms (at most 60 s).
The next owner then reads that micro-batch's share of the partition again: per such event
at most one micro-batch, so at most maxOffsetsPerTrigger records when it is set. (Under a
processing-time trigger the last micro-batch that finished before a stop counts as not
yet committed: its end is committed when the next trigger fires.) Restarting a stopped
query from its checkpoint re-runs a micro-batch it had planned but not finished, reading
the recorded ranges even of partitions the group has since given to another member: again
at most one micro-batch.

Stopping: a stopped query's reader commits what it finished and leaves the group, so the
others take its partitions at once. Spark ends the reader's Python process soon after
asking it to stop, and sometimes before the LeaveGroup is out; the member is then removed
when its session expires (session.timeout.ms), and the hand-over waits that long. Nothing is
lost either way: the partitions move at the group's committed offsets.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping

from kgroup.client import CommitFailedError, Consumer, ConsumerRebalanceListener, TopicPartition
from kgroup.client.blocking import LoopThread
from kgroup.client.errors import KafkaClientError

from .offsets import TP
from .options import SourceOptions

_TICK_S = 0.5
_CLOSE_S = 10.0


class QueryMember(ConsumerRebalanceListener):
    """The query's membership; see the module comment."""

    def __init__(self, opts: SourceOptions, loop: LoopThread, starting: str) -> None:
        self.opts = opts
        self.loop = loop
        settings = {"client.id": "kgroup-spark-query", **opts.consumer,
                    "bootstrap.servers": opts.bootstrap, "group.id": opts.group_id,
                    "group.instance.id": opts.group_instance_id,
                    "group.protocol": opts.group_protocol, "enable.auto.commit": False,
                    "auto.offset.reset": starting}
        self.consumer = Consumer(settings)
        # How long a revocation waits for the micro-batch in flight: within the time the
        # coordinator gives a member to rejoin.
        self.revoke_wait_s = min(60.0, self.consumer.settings["max.poll.interval.ms"] / 2000)
        self._lock = threading.Lock()
        self._owned: set[TP] = set()
        self._valid: set[TP] = set()      # owned since planned: start positions are ours
        self._revoking: set[TP] = set()
        self._inflight: dict[TP, int] = {}
        self._batch_done = threading.Event()
        self._batch_done.set()
        self._pending: dict[TP, int] = {}  # commits the group refused while rebalancing
        self._committed: dict[TP, int] = {}
        self._joined = False
        self._closing = False
        self._error: BaseException | None = None
        self._ticker: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        async def start() -> None:
            await self.consumer.start()
            if self.opts.pattern is not None:
                self.consumer.subscribe(pattern=self.opts.pattern, listener=self)
            else:
                self.consumer.subscribe(self.opts.subscribe, listener=self)
            self._ticker = asyncio.create_task(self._tick())

        self.loop.run(start())

    def close(self) -> None:
        """Leave the group (a static member only stops heartbeating)."""
        with self._lock:
            self._closing = True
        self._batch_done.set()
        try:
            self.loop.run(self._close(), timeout=_CLOSE_S)
        except (TimeoutError, KafkaClientError):
            pass

    async def _close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        await self.consumer.close()

    # -- the planner's side -----------------------------------------------------------------

    def view(self, timeout_s: float) -> tuple[set[TP], set[TP]]:
        """(continuing, new) owned partitions once the member is stable (see the module
        comment); waits up to ``timeout_s`` for a rebalance in progress to finish."""
        deadline = time.monotonic() + timeout_s
        while not self._stable() and time.monotonic() < deadline:
            self._raise_error()
            time.sleep(0.05)
        self._raise_error()
        if not self._joined:
            raise KafkaClientError(
                f"the query did not join group {self.opts.group_id!r} within {timeout_s:g}s",
                "check the broker, and that no other member uses the same group.instance.id")
        with self._lock:
            owned = set(self._owned)
            return owned & self._valid, owned - self._valid

    def planned(self, positions: Mapping[TP, int]) -> None:
        """A micro-batch ending at ``positions`` was planned; it is in flight until
        ``completed``."""
        with self._lock:
            self._inflight = dict(positions)
            self._valid = {tp for tp in positions if tp in self._owned}
            self._batch_done.clear()

    def completed(self, positions: Mapping[TP, int]) -> None:
        """Every micro-batch up to ``positions`` is done: commit what is still ours."""
        with self._lock:
            mine = {tp: off for tp, off in positions.items()
                    if tp in self._valid and (tp in self._owned or tp in self._revoking)
                    and self._committed.get(tp) != off}
            done = self._inflight and all(positions.get(tp) == off
                                          for tp, off in self._inflight.items())
        try:
            if mine:
                self.loop.run(self._commit(mine))
        finally:
            if done:
                with self._lock:
                    self._inflight = {}
                self._batch_done.set()
        self._raise_error()

    def _stable(self) -> bool:
        group = self.consumer.group
        with self._lock:
            stable = not self._revoking and group is not None and group.member.in_group
            self._joined |= stable
            return stable

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    # -- on the loop -------------------------------------------------------------------------

    async def _commit(self, offsets: Mapping[TP, int]) -> None:
        try:
            await self.consumer.commit({TopicPartition(*tp): off for tp, off in offsets.items()})
        except CommitFailedError:
            with self._lock:
                self._pending.update(offsets)
            return
        with self._lock:
            for tp, off in offsets.items():
                self._committed[tp] = off
                if self._pending.get(tp) == off:
                    del self._pending[tp]

    async def _tick(self) -> None:
        while True:
            try:
                await self.consumer.getmany(timeout_ms=0)  # liveness; paused: no records
            except KafkaClientError as exc:  # fatal for the member, e.g. FENCED_INSTANCE_ID
                self._error = exc
                return
            with self._lock:
                retry = {tp: off for tp, off in self._pending.items()
                         if tp in self._valid and tp in self._owned}
                self._pending = retry
            group = self.consumer.group
            if retry and group is not None and group.member.in_group:
                await self._commit(retry)
            await asyncio.sleep(_TICK_S)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.consumer.pause(*assigned)  # Spark's tasks read; the consumer only belongs
        with self._lock:
            self._owned |= {(tp.topic, tp.partition) for tp in assigned}
            self._joined = True

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        tps = {(tp.topic, tp.partition) for tp in revoked}
        with self._lock:
            self._owned -= tps
            self._revoking |= tps
            wait = not self._closing and bool(tps & self._inflight.keys())
        try:
            if wait:  # let the micro-batch in flight finish and commit them
                await asyncio.to_thread(self._batch_done.wait, self.revoke_wait_s)
        finally:
            with self._lock:
                self._revoking -= tps
                self._forget(tps)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        tps = {(tp.topic, tp.partition) for tp in lost}
        with self._lock:
            self._owned -= tps
            self._forget(tps)

    def _forget(self, tps: set[TP]) -> None:
        """Positions of these partitions are no longer ours (call with the lock held)."""
        self._valid -= tps
        for tp in tps:
            self._pending.pop(tp, None)
            self._committed.pop(tp, None)
