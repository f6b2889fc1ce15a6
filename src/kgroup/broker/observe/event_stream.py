"""The group event stream: every group change as a JSON record on `__kgroup_events`.

How this works: after a shard has run a handler or a timer and replayed its records, it
hands the stream the Result, which carries the typed events of the groups the handler
changed (core/result.py, `events`; the handlers make them: core/group_events.py). A Result
that names no group (a commit, a fetch, a steady heartbeat) is not looked at. When a node
loads a shard (a takeover, a hand-back, a restart) or hands one on, every group of it, of
every kind (core/kinds.py), gets a coordinator event. Each event is a record (key = group id,
value = the JSON object) appended to `__kgroup_events` through the same storage as produced
data, so any Kafka client can fetch them. The topic has one partition per group-metadata
partition, owned with it (storage/data_dir.py: a bound topic): a group's events go to the
partition of its coordinator, so in a cluster the node that coordinates a group writes its
events, in order. The events ready in one turn of the event loop go out as one record batch
per partition and one flush (a rebalance of a thousand members is a thousand joins in a few
turns).

The events are also handed, as they are derived, to the group observer (the group log, the
web console and the metrics: group_observer.py), also when writing them to the topic is
off (`write=False`, `--no-group-events`).

A change is written once the group-metadata records behind it are durable per the fsync
policy: under `always` its events wait, in order, behind the shard's next fsync; the
event log itself is flushed but not fsynced on its own. Best effort throughout: nothing
here blocks or fails a group request, and an error is logged, not raised.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from kgroup.broker.durability import Durability
from kgroup.broker.internal_topics import GROUP_EVENTS_TOPIC
from kgroup.core.group_events import EventKind, GroupEvent, coordinator_event
from kgroup.core.kinds import live_groups
from kgroup.core.result import Result
from kgroup.storage import DataDir, StorageError
from kgroup.storage.errors import TopicError
from kgroup.wire.record_batch import build_batch

if TYPE_CHECKING:
    from kgroup.broker.groups.shard import Shard

log = logging.getLogger("kgroup.broker.events")

# After the first failure is logged in full, one line every this many.
LOG_EVERY = 1000

# The GroupChange.what of the offsets-expiry timer (core/offsets.py): the observer logs it.
OFFSETS_EXPIRED = "offsets expired"

# Most records in one batch (about 300 bytes each: far below max.message.bytes).
BATCH_RECORDS = 1000


def ensure_topic(data: DataDir) -> None:
    """Create `__kgroup_events` with one partition per group-metadata partition, or grow
    it to that (it had one partition before clusters existed). Another node of a cluster
    may do the same at the same moment: either one's change is fine."""
    wanted = data.metadata_log.num_partitions
    for _ in range(3):
        meta = data.topics().get(GROUP_EVENTS_TOPIC)
        try:
            if meta is None:
                data.create_topic(GROUP_EVENTS_TOPIC, wanted)
                log.info("created internal topic %s with %d partitions", GROUP_EVENTS_TOPIC, wanted)
            elif meta.partitions < wanted:
                data.create_partitions(GROUP_EVENTS_TOPIC, wanted)
                log.info("grew internal topic %s to %d partitions", GROUP_EVENTS_TOPIC, wanted)
            return
        except TopicError:
            data.refresh_topics()  # another node changed it first



class GroupEventStream:
    """Derives group events after each shard call and appends them to the internal topic.

    The shard calls `after` only for a Result with changes, so a call that changed no group
    (a steady heartbeat) costs it one attribute test.
    """

    def __init__(self, data: DataDir, durability: Durability,
                 ring: Callable[[tuple[str, int]], None] | None = None, *, write: bool = True,
                 observer: Any = None) -> None:
        self.data = data
        self.durability = durability
        self.ring = ring
        self.write = write
        self.observer = observer
        self.written = 0
        self.failures = 0
        # shard partition -> (group-metadata end offset, events) waiting for that offset
        # to be durable; at most one drain task per partition.
        self._waiting: dict[int, deque[tuple[int, list[GroupEvent]]]] = {}
        self._tasks: set[asyncio.Task] = set()
        # Events due to be written at the end of this turn of the event loop, in order, by
        # partition (that of the shard whose groups they are about).
        self._ready: dict[int, list[GroupEvent]] = {}

    # ---- what the shard calls ------------------------------------------------------------

    def loaded(self, shard: Shard) -> None:
        """A shard finished loading: its groups as they are now are the observer's starting point."""
        if self.observer is not None:
            self.observer.loaded(shard)

    def coordinator_loaded(self, shard: Shard, node: int, previous_node: int | None, load_ms: int,
                           now_ms: int) -> None:
        """This node took a shard over and loaded it: one event per group it holds (on the
        topic only: the broker log says the same in one line per partition)."""
        if not self.write:
            return
        try:
            self._append(shard.index, [coordinator_event(group, EventKind.COORDINATOR_LOADED, now_ms, node,
                                                         previous_node, load_ms)
                                       for group in live_groups(shard.coordinator.shard)])
        except Exception:
            self._failed("deriving coordinator events")

    async def coordinator_unloaded(self, shard: Shard, node: int, to_node: int | None, now_ms: int) -> None:
        """This node is handing a shard on (its log is durable, its requests answered): the
        events still waiting for it go out first, then one per group, all written before
        the partition is released."""
        if not self.write:
            return
        while id(shard.partition) in self._waiting:
            await asyncio.sleep(0.005)
        try:
            self._append(shard.index, [coordinator_event(group, EventKind.COORDINATOR_UNLOADED, now_ms, node, to_node)
                                       for group in live_groups(shard.coordinator.shard)])
        except Exception:
            self._failed("deriving coordinator events")
        if self._ready:
            self._write()

    def after(self, shard: Shard, result: Result, now_ms: int) -> None:
        """A core handler or timer ran and its records were replayed; `result.changes` is not empty."""
        observer = self.observer
        if observer is not None and result.records and any(c.what == OFFSETS_EXPIRED for c in result.changes):
            observer.offsets_expired(result.records, now_ms)
        try:
            events = list(result.events)
            if events:
                if self.observer is not None:
                    self.observer.group_events(shard, events)
                if self.write:
                    self._publish(shard, events)
        except Exception:
            self._failed("deriving group events")

    def _publish(self, shard: Shard, events: list[GroupEvent]) -> None:
        partition = shard.partition
        end = partition.log_end_offset
        queue = self._waiting.get(id(partition))
        if queue is None and (not self.durability.policy.sync_before_answer or partition.durable_end >= end):
            self._append(shard.index, events)
            return
        if queue is None:
            queue = self._waiting[id(partition)] = deque()
            task = asyncio.get_running_loop().create_task(self._drain(shard.index, partition, queue))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        queue.append((end, events))

    async def _drain(self, index: int, partition: Any, queue: deque[tuple[int, list[GroupEvent]]]) -> None:
        """Write queued events, oldest first, as the shard's log becomes durable under them."""
        try:
            while queue:
                await self.durability.durable(partition, queue[-1][0])
                while queue and queue[0][0] <= partition.durable_end:
                    self._append(index, queue.popleft()[1])
        except StorageError as exc:
            # The shard's partition was handed over or lost: its queued events go with it.
            self._failed(f"waiting to write {sum(len(p) for _, p in queue)} group events: {exc}", quiet=True)
        except Exception:
            self._failed(f"waiting to write {sum(len(p) for _, p in queue)} group events")
        finally:
            self._waiting.pop(id(partition), None)

    def _append(self, partition: int, events: list[GroupEvent]) -> None:
        """Write `events` after everything before them, at the end of this loop turn."""
        first = not self._ready
        self._ready.setdefault(partition, []).extend(events)
        if first:
            try:
                asyncio.get_running_loop().call_soon(self._write)
            except RuntimeError:                  # no loop (a test driving the stream directly)
                self._write()

    def _write(self) -> None:
        ready, self._ready = self._ready, {}
        for partition, events in ready.items():
            try:
                plog = self.data.partition_log(GROUP_EVENTS_TOPIC, partition)
                for i in range(0, len(events), BATCH_RECORDS):
                    plog.append(build_batch([(e.group.encode(), e.to_json(), (), e.time_ms)
                                             for e in events[i:i + BATCH_RECORDS]]))
                plog.flush()
            except StorageError as exc:
                # The partition moved to another node with its coordinator (or its topic is
                # missing): these events are lost, the groups are not affected.
                self._failed(f"writing {len(events)} group events to {GROUP_EVENTS_TOPIC}-{partition}: {exc}",
                             quiet=True)
                continue
            except Exception:
                self._failed(f"writing {len(events)} group events to {GROUP_EVENTS_TOPIC}-{partition}")
                continue
            self.written += len(events)
            if self.ring is not None:
                self.ring((GROUP_EVENTS_TOPIC, partition))

    def _failed(self, what: str, quiet: bool = False) -> None:
        self.failures += 1
        if self.failures == 1:
            if quiet:
                log.warning("%s failed (group requests are not affected)", what)
            else:
                log.exception("%s failed (group requests are not affected)", what)
        elif self.failures % LOG_EVERY == 0:
            log.warning("%s failed (%d failures so far)", what, self.failures)
