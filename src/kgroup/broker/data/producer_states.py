"""The producer state of every topic partition this broker serves, kept beside its log.

How this works: a partition's `PartitionProducers` (core/transactions/producer_state.py) is
built the first time the partition is produced to, fetched from or asked about: from the
newest producer-state snapshot the surviving log still covers, then by reading the header
of every batch after it (`PartitionLog.scan_batches`) -- data batches and end-of-transaction
markers -- exactly as they were appended live. Snapshots are written on a clean shutdown
and after every SNAPSHOT_EVERY producer batches, so a restart after `kill -9` reads a short
tail. The state therefore moves with the partition's log (and, in a cluster, with its
leadership): nothing about it lives anywhere else.

Markers are appended here too (`append_marker`): through the same `PartitionLog.append` as
produced batches, checked and recorded in the same state, ringing the same arrival watch so
a read_committed fetch waiting at the last stable offset wakes when a transaction ends.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from kgroup.core.transactions.producer_state import BatchInfo, PartitionProducers
from kgroup.storage import PartitionLog, StorageError
from kgroup.storage.producer_snapshots import (
    drop_snapshots_after,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from kgroup.wire.record_batch import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    BatchHeader,
    build_control_batch,
    read_batch_header,
    read_marker,
)

log = logging.getLogger("kgroup.broker.producers")

PartitionKey = tuple[str, int]
# Write a partition's snapshot once this many producer batches were appended since the last.
SNAPSHOT_EVERY = 20_000


def batch_info(h: BatchHeader) -> BatchInfo:
    return BatchInfo(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta + 1,
                     h.is_transactional, h.max_timestamp)


class ProducerStates:
    """Producer state per partition, loaded on first use (see the module docstring)."""

    def __init__(self, ring: Callable[[PartitionKey], None] | None = None) -> None:
        self._states: dict[PartitionKey, PartitionProducers] = {}
        self._logs: dict[PartitionKey, PartitionLog] = {}
        self._since_snapshot: dict[PartitionKey, int] = {}
        self.ring = ring

    def of(self, key: PartitionKey, plog: PartitionLog) -> PartitionProducers:
        """The partition's producer state (built now if this is its first use)."""
        state = self._states.get(key)
        if state is None or self._logs.get(key) is not plog:
            state = self._states[key] = load(plog)
            self._logs[key] = plog
            self._since_snapshot[key] = 0
        return state

    def loaded(self, key: PartitionKey) -> PartitionProducers | None:
        """The state if it is loaded already (a fetch of a partition nobody produced to
        since the start need not build it: see `last_stable_offset`)."""
        return self._states.get(key)

    def appended(self, key: PartitionKey, batches: int) -> None:
        """`batches` producer batches went into the partition: snapshot now and then."""
        count = self._since_snapshot.get(key, 0) + batches
        self._since_snapshot[key] = count
        if count >= SNAPSHOT_EVERY:
            self.snapshot(key)

    def append_marker(self, key: PartitionKey, plog: PartitionLog, producer_id: int, producer_epoch: int,
                      commit: bool, coordinator_epoch: int, now_ms: int) -> int:
        """Append an end-of-transaction marker; returns its offset. Raises
        ProducerStateError if the partition refuses it (a fenced epoch or coordinator)."""
        state = self.of(key, plog)
        state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        offset = plog.append(build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms))
        state.append_marker(producer_id, producer_epoch, commit, coordinator_epoch, offset, now_ms)
        self.appended(key, 1)
        if self.ring is not None:
            self.ring(key)
        return offset

    def snapshot(self, key: PartitionKey) -> None:
        state, plog = self._states.get(key), self._logs.get(key)
        if state is None or plog is None:
            return
        try:
            write_snapshot(plog.directory, plog.log_end_offset, json.dumps(state.to_snapshot()).encode())
            self._since_snapshot[key] = 0
        except StorageError as exc:
            log.warning("producer-state snapshot of %s-%d failed (the log still has everything): %s",
                        key[0], key[1], exc)

    def snapshot_all(self) -> None:
        """On a clean shutdown: a snapshot at the log end of every loaded partition."""
        for key in list(self._states):
            self.snapshot(key)

    def retain(self, logs: dict[PartitionKey, PartitionLog]) -> None:
        """Forget the state of partitions whose log is gone (a deleted topic)."""
        for key in [k for k, plog in self._logs.items() if logs.get(k) is not plog]:
            self.forget(key)

    def forget(self, key: PartitionKey) -> None:
        """Drop one partition's state (a cluster node handed the partition on or lost it)."""
        self._states.pop(key, None)
        self._logs.pop(key, None)
        self._since_snapshot.pop(key, None)

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle past producer.id.expiration.ms; returns how many."""
        return sum(len(state.expire(now_ms, expiration_ms)) for state in self._states.values())

    def truncate_heads(self) -> None:
        """After retention: forget what only deleted records held."""
        for key, state in self._states.items():
            state.truncate_head(self._logs[key].log_start_offset)


def load(plog: PartitionLog) -> PartitionProducers:
    """Build a partition's producer state: the newest usable snapshot, then the batches after it."""
    end = plog.log_end_offset
    drop_snapshots_after(plog.directory, end)
    state, start = None, plog.log_start_offset
    for offset, path in reversed(list_snapshots(plog.directory)):
        try:
            state = PartitionProducers.from_snapshot(json.loads(read_snapshot(path)))
            start = offset
            break
        except (ValueError, StorageError) as exc:
            log.warning("ignoring producer-state snapshot %s: %s", path, exc)
    if state is None:
        state = PartitionProducers()
    if start < end:
        for prefix in plog.scan_batches(start):
            h = read_batch_header(prefix)
            if h.base_offset < start:
                continue
            if h.is_control:
                marker = read_marker(prefix)
                if marker is not None and marker[0] in (CONTROL_ABORT, CONTROL_COMMIT):
                    state.append_marker(h.producer_id, h.producer_epoch, marker[0] == CONTROL_COMMIT,
                                        marker[1], h.base_offset, h.max_timestamp)
            elif h.producer_id >= 0:
                state.append(batch_info(h), h.base_offset, h.last_offset)
    state.truncate_head(plog.log_start_offset)
    return state

