"""One coordinator shard: a GroupCoordinatorShard bound to one group-metadata log partition.

How this works: `call(handler, request)` runs the pure handler with an asyncio future as the
reply token, appends the records it returned to the partition log, replays them, and hands
replies out once the log is durable up to its end *as of that moment* — so no reply ever
reveals state that a crash could take back. Parked replies (a JoinGroup waiting for the
rebalance) resolve later from another request's or a timer's Result, through the same path.
Timers: after every call the shard re-arms one loop timer at the core's next deadline, and
runs what is due through the core's `run_due_timers`; a load replays through its
`replay_payloads` (core/host.py says why the shard keeps its own `apply`).
Loading replays the partition's snapshot and log tail; until it finishes, group requests
get COORDINATOR_LOAD_IN_PROGRESS. With the group event stream on (`events`), every call,
timer and topic change whose Result names a group it changed is reported to it once its
records are replayed (event_stream.py). Transaction markers a Result asks for go to
`on_markers` (broker/txn/txn_markers.py) once the records before them are durable, like replies.

In a cluster (broker/cluster/ownership.py) a shard lives as long as this node owns its partition.
`gate` runs before every call and timer (the self-fencing check after a pause). When the
partition is handed over, `drain` stops new calls (NOT_COORDINATOR), waits until what was
appended is durable and answered, and answers parked requests NOT_COORDINATOR; when it is
lost, `close` does the last part at once. A write refused by the ownership fence fails its
request with NOT_COORDINATOR and reports the loss (`on_fenced`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any, Callable

from kgroup.broker.durability import Durability
from kgroup.core import record_codec
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.host import replay_payloads, run_due_timers
from kgroup.core.result import Result
from kgroup.core.transactions.config import TransactionConfig
from kgroup.storage.errors import FencedError, LogClosedError
from kgroup.storage.metadata_log import MetadataPartition

log = logging.getLogger("kgroup.broker.coordinator")

# A snapshot is written once the records appended since the last one reach the larger of
# SNAPSHOT_MIN_EVERY and the last snapshot's own size (the live state). So a restart replays
# at most about the live state twice plus SNAPSHOT_MIN_EVERY records per shard, however long
# the groups have committed, and snapshots cost at most one record written again per record
# appended. (A fixed 100,000 made a shard of 2,000 live offsets replay up to 100,000.)
SNAPSHOT_MIN_EVERY = 10_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# Records loaded before a load freezes what it loaded out of the cyclic GC's reach.
_FREEZE_AFTER = 10_000


class Shard:
    def __init__(self, index: int, partition: MetadataPartition, config: GroupConfig,
                 durability: Durability, new_member_id: Callable[[str], str],
                 txn_config: TransactionConfig | None = None,
                 new_producer_id: Callable[[], int] | None = None, *,
                 events: Any = None, watch: Any = None, on_markers: Callable[[Shard, Any], None] | None = None,
                 coordinator_epoch: int = 0, gate: Callable[[], None] | None = None,
                 on_fenced: Callable[[], None] | None = None) -> None:
        self.index = index
        self.partition = partition
        self.durability = durability
        self.coordinator = GroupCoordinatorShard(config, new_member_id, txn_config, new_producer_id)
        # Where transaction markers go (TxnMarkerChannel.send), and the epoch markers carry:
        # a coordinator that lost its partition must not write markers in a newer one's name
        # (0 on a single broker).
        self.on_markers = on_markers
        self.coordinator_epoch = coordinator_epoch
        self.loaded = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self._since_snapshot = 0
        self._snapshot_size = 0       # records in the last snapshot: the live state then
        self._snapshot_task: asyncio.Task | None = None
        # Log end already flushed to the kernel (used only by the non-fsync policies).
        self._flushed_end = -1
        # The group event stream (observe/event_stream.py), or None when it is off.
        self.events = events
        # The control API's waits on groups (control/group_watch.py), or None when it is off.
        self.watch = watch
        # Cluster hooks: the self-fencing check, and what to do when a write was fenced.
        self.gate: Callable[[], None] = gate or _nothing
        self.on_fenced: Callable[[], None] = on_fenced or _nothing
        self.closed = False
        self._waiting: set[Reply] = set()         # replies a request is waiting for
        self._delivering: set[asyncio.Task] = set()

    # ---- loading --------------------------------------------------------------------------

    def load(self, between_chunks: Callable[[], None] | None = None) -> int:
        """Replay the snapshot and log tail into the coordinator; returns records replayed.
        `between_chunks` runs after each few MB of log (a cluster node renews its lease
        there, so a long load does not look like a hung node)."""
        replay = self.partition.load()
        count = 0
        coordinator = self.coordinator
        # No cyclic GC while loading: a load creates millions of long-lived objects (two per
        # offset commit) and no cycles, and each allocation-triggered collection walks the
        # growing heap; with it on, a load of 1M distinct commits took twice as long. After
        # it, what was loaded is frozen out of the collector's reach (gc.freeze): refcounts
        # still free each object when it is replaced, but no later collection walks them
        # (the first one after a 1M-commit load paused 0.34 s, every full one 0.14 s). Only
        # after a big load: freezing also keeps whatever cyclic garbage exists at that moment.
        collecting = gc.isenabled()
        gc.disable()
        try:
            snapshot = list(replay.snapshot)
            replay_payloads(coordinator, snapshot)
            count += len(snapshot)
            self._snapshot_size = len(snapshot)
            for payloads in replay.tail_chunks:
                replay_payloads(coordinator, payloads)
                count += len(payloads)
                self._since_snapshot += len(payloads)
                if between_chunks is not None:
                    between_chunks()
            # Rebuilding the runtime groups allocates too (a 10,000-group load spent 0.3 s
            # in collections there with the collector back on).
            completed = coordinator.load_complete(now_ms())
        finally:
            if collecting:
                if count >= _FREEZE_AFTER:
                    gc.freeze()
                gc.enable()
        self.apply(completed)
        if self.events is not None:
            self.events.loaded(self)
        self.loaded = True
        if self.watch is not None:
            self.watch.everything()
        return count

    def update_topics(self, image: dict[str, tuple[str, int]]) -> None:
        """The broker's topics changed: consumer groups subscribed to them get a new epoch."""
        now = now_ms()
        result = self.coordinator.update_topics(image, now)
        self.apply(result)
        if self.events is not None and result.changes:
            self.events.after(self, result, now)

    # ---- requests -------------------------------------------------------------------------

    async def call(self, handler: Callable[..., Result], request: Any, *args: Any) -> Any:
        """Run a core handler and wait for its reply to this request."""
        reply = self.submit(handler, request, *args)
        # Most replies are given at once (a heartbeat, a commit under fsync=never): no
        # future, no suspension. A parked or fsync-waiting reply gets a future to wait on.
        if reply.state is _GIVEN:
            return reply.value
        return await self.wait(reply)

    def submit(self, handler: Callable[..., Result], request: Any, *args: Any) -> "Reply":
        """Run a core handler and append its records now, without waiting: its reply comes
        with `wait`. Several submits in a row reach the log in the order they are made."""
        self.gate()
        if self.closed:
            raise GroupError(ErrorCode.NOT_COORDINATOR)
        if not self.loaded:
            raise GroupError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if not self.partition.owned:
            # Another node took the partition over and this node has not noticed yet: it
            # answers nothing for it, not even from memory.
            self.on_fenced()
            raise GroupError(ErrorCode.NOT_COORDINATOR)
        reply = Reply()
        now = now_ms()
        result = handler(request, reply, now, *args)
        try:
            self.apply(result)
        except FencedError:
            self.on_fenced()
            raise GroupError(ErrorCode.NOT_COORDINATOR) from None
        events = self.events
        if events is not None and result.changes:
            # Only a Result that names a group it changed: a steady heartbeat names none.
            events.after(self, result, now)
        return reply

    async def wait(self, reply: "Reply") -> Any:
        """The reply of a `submit`, once it is given (and durable)."""
        if reply.state is _GIVEN:
            return reply.value
        if reply.state is _FAILED:
            raise reply.value
        reply.future = asyncio.get_running_loop().create_future()
        self._waiting.add(reply)
        try:
            return await reply.future
        finally:
            self._waiting.discard(reply)

    def apply(self, result: Result) -> None:
        """Persist and replay a Result's records; release its replies once durable."""
        records = result.records
        if records:
            encode = record_codec.encode
            append = self.partition.append
            replay = self.coordinator.replay
            for record in records:
                append(encode(record))
                replay(record)
            self._since_snapshot += len(records)
        if result.replies:
            end = self.partition.log_end_offset
            if self.partition.durable_end >= end or end <= self._flushed_end:
                # Nothing new since the last fsync (or, under fsync=never/interval, since the
                # last flush): a steady heartbeat must not cost a flush.
                _deliver(result.replies)
            elif not self.durability.policy.sync_before_answer:
                self._flushed_end = end
                # fsync=never/interval: durable() only flushes to the kernel and never waits,
                # so run it here rather than in a task per reply.
                waiting = self.durability.durable(self.partition, end)
                try:
                    waiting.send(None)
                except StopIteration:
                    _deliver(result.replies)
                except Exception as exc:
                    _fail(result.replies, exc)
                else:  # it waits after all (not for these policies today): use a task
                    waiting.close()
                    self._deliver_later(end, result.replies)
            else:
                self._deliver_later(end, result.replies)
        if result.markers and self.on_markers is not None:
            end = self.partition.log_end_offset
            if self.partition.durable_end >= end:
                self._send_markers(result.markers)
            else:
                asyncio.get_running_loop().create_task(self._markers_when_durable(end, result.markers))
        if self.watch is not None and result.changes:
            self.watch.changed(result.changes)
        self._arm_timer()
        if self._since_snapshot >= max(SNAPSHOT_MIN_EVERY, self._snapshot_size) and self._snapshot_task is None:
            self._snapshot_task = asyncio.get_running_loop().create_task(self._snapshot())

    def _deliver_later(self, end: int, replies) -> None:
        task = asyncio.get_running_loop().create_task(self._deliver_when_durable(end, replies))
        self._delivering.add(task)
        task.add_done_callback(self._delivering.discard)

    async def _deliver_when_durable(self, end: int, replies) -> None:
        try:
            await self.durability.durable(self.partition, end)
        except FencedError:
            # Another node owns the partition now: the client must find it.
            _fail(replies, GroupError(ErrorCode.NOT_COORDINATOR))
            self.on_fenced()
            return
        except Exception as exc:
            _fail(replies, exc)
            return
        _deliver(replies)

    def _send_markers(self, markers) -> None:
        for m in markers:
            self.on_markers(self, m)

    async def _markers_when_durable(self, end: int, markers) -> None:
        # Markers only once PrepareCommit/PrepareAbort is durable: a marker written for a
        # decision a crash could take back would commit data the coordinator then aborts.
        try:
            await self.durability.durable(self.partition, end)
        except Exception:
            log.exception("shard %d: the log did not become durable; markers wait for a restart", self.index)
            return
        self._send_markers(markers)

    # ---- timers ---------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        if self.closed:
            return
        earlier = self.coordinator.take_earliest_armed()
        armed = self._timer_deadline
        if self._timer is not None and armed is not None and (earlier is None or earlier >= armed):
            # Nothing armed since is due before the wake-up set: it stands. Finding the
            # earliest deadline repairs the timer heap's head, which a steady heartbeat has
            # just made stale: ~5% of a consumer heartbeat's CPU, for an answer not needed.
            return
        deadline = self.coordinator.next_deadline()
        if deadline == armed:
            return
        # A later deadline keeps the timer set for the earlier one: it fires early, finds
        # nothing due and arms for what is earliest then. Heartbeats push the earliest
        # session deadline later on nearly every call, and re-arming each time cancelled and
        # scheduled an asyncio timer per heartbeat.
        if self._timer is not None and deadline is not None and armed is not None and deadline > armed:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, (deadline - now_ms()) / 1000)
            self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_deadline = None
        self.gate()  # after a pause: nothing expires on a partition this node lost
        if self.closed:
            return
        now = now_ms()
        events = self.events
        try:
            # Bounded: never starve the loop (what is left runs at the next timer, re-armed below).
            for op, result in run_due_timers(self.coordinator, now, self.apply, limit=10_000):
                if events is not None and result.changes:
                    events.after(self, result, now)
        except FencedError:
            self.on_fenced()
            return
        self._arm_timer()

    # ---- snapshots ------------------------------------------------------------------------

    async def _snapshot(self) -> None:
        try:
            # The records are taken on the loop (a consistent cut); encoding and writing them
            # happen in a worker thread so a large snapshot does not stall requests.
            offset = self.partition.log_end_offset
            records = self.coordinator.snapshot_records()
            cut = self._since_snapshot      # records appended while it is written count on
            # The snapshot's offset begins a segment: a restart reads the log from there
            # (not the whole segment, split and thrown away up to it), and the segments
            # below the older retained snapshot are deleted once this one is written.
            self.partition.roll()

            def write() -> int:
                payloads = [record_codec.encode(r) for r in records]
                self.partition.write_snapshot(offset, payloads)
                return len(payloads)

            count = await asyncio.to_thread(write)
            self._since_snapshot -= cut
            self._snapshot_size = count
            log.info("shard %d: snapshot of %d records at offset %d", self.index, count, offset)
        except (FencedError, LogClosedError):
            log.info("shard %d: no snapshot: the partition was handed on or lost meanwhile", self.index)
        except Exception:
            log.exception("shard %d: snapshot failed (the log still has everything)", self.index)
        finally:
            self._snapshot_task = None

    async def drain(self) -> None:
        """Clean hand-over: refuse new calls, let what was appended become durable and its
        answers go out, then answer the parked requests NOT_COORDINATOR."""
        self.closed = True
        self._cancel_timer()
        try:
            await self.durability.durable(self.partition, self.partition.log_end_offset)
        except Exception:
            pass  # the waiting answers fail on their own; the partition is closed next
        if self._delivering:
            await asyncio.gather(*list(self._delivering), return_exceptions=True)
        self.close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_deadline = None

    def close(self) -> None:
        """Stop: no timers, no calls, and every request still waiting for an answer gets
        NOT_COORDINATOR (its client finds the new coordinator)."""
        self.closed = True
        self._cancel_timer()
        waiting, self._waiting = self._waiting, set()
        _fail([(reply, None) for reply in waiting], GroupError(ErrorCode.NOT_COORDINATOR))


_WAITING, _GIVEN, _FAILED = 0, 1, 2


def _nothing() -> None:
    pass


class Reply:
    """The reply token a shard hands to a core handler: the response lands here, and wakes
    the request's future if it had to wait for one."""

    __slots__ = ("state", "value", "future")

    def __init__(self) -> None:
        self.state = _WAITING
        self.value: Any = None
        self.future: asyncio.Future | None = None


def _deliver(replies) -> None:
    for token, response in replies:
        _settle(token, _GIVEN, response)


def _fail(replies, exc: BaseException) -> None:
    for token, _ in replies:
        _settle(token, _FAILED, exc)


def _settle(token: object, state: int, value: Any) -> None:
    """Give one reply token its outcome (``_GIVEN`` a response, ``_FAILED`` an exception):
    a Reply keeps the first outcome only and wakes its future; a bare future takes it
    unless it is done."""
    if type(token) is Reply:
        if token.state is not _WAITING:
            return
        token.state = state
        token.value = value
        fut = token.future
    elif isinstance(token, asyncio.Future):
        fut = token
    else:
        return
    if fut is not None and not fut.done():
        if state is _GIVEN:
            fut.set_result(value)
        else:
            fut.set_exception(value)
