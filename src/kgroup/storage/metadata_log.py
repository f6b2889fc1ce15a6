"""The group-metadata log (our `__consumer_offsets`): N partitions of framed records, each
with snapshots that bound replay time.

Layout: `<directory>/partitions.json` records the partition count (changing it would move
groups between partitions, so a mismatch raises `StorageConfigError`); partition p lives in
`<directory>/<p>/` with segments `<base>.log` and snapshots `<offset>.snapshot`.

Restart: `load()` returns the newest valid snapshot (a corrupt one is skipped in favour of an
older one, or of the full log) and the log records after it. `write_snapshot` keeps the newest
`snapshots_retained` snapshots and deletes the segments entirely below the oldest one kept, so
the fallback to an older snapshot still has its tail.

Durability and threading: see `segments.py`. `append` on the loop, `sync` in a worker thread;
an acknowledged change must be below the `durable_end` returned by `sync`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from kgroup.storage.atomic_files import fsync_directory, write_atomically
from kgroup.storage.errors import CorruptDataError, NotOwnedError, StorageConfigError, StorageError
from kgroup.storage.group_hash import partition_for_group
from kgroup.storage.record_log import RecordLog
from kgroup.storage.segments import log
from kgroup.storage.snapshots import SnapshotStore

DEFAULT_PARTITIONS = 50


@dataclass(slots=True)
class Replay:
    """What `load()` hands to the core: replay `snapshot` then the tail.

    `snapshot_offset` is the log offset the snapshot stands for (0 and an empty snapshot
    when there is none); `tail_chunks` yields the payloads of the log from there to its end,
    a list at a time, and `tail` the same records one by one as (offset, payload). They
    share one read: use one of them.
    """

    snapshot_offset: int
    snapshot: Iterator[bytes]
    tail_chunks: Iterator[list[bytes]]

    @property
    def tail(self) -> Iterator[tuple[int, bytes]]:
        offset = self.snapshot_offset
        for payloads in self.tail_chunks:
            for payload in payloads:
                yield offset, payload
                offset += 1


class MetadataPartition:
    """One group-metadata partition: a `RecordLog` plus its `SnapshotStore`."""

    def __init__(self, directory: Path, partition: int, segment_bytes: int = 100 * 1024 * 1024,
                 snapshots_retained: int = 2, plan=None, fence=None) -> None:
        if snapshots_retained < 1:
            raise StorageConfigError(f"snapshots_retained must be >= 1, got {snapshots_retained}")
        self.partition = partition
        try:
            self.log = RecordLog(Path(directory), segment_bytes, plan, fence)
        finally:
            if plan is not None:
                plan.close_snapshots()
        # Within a cluster: this epoch's directory (epoch_dirs.py).
        self.directory = self.log.directory
        self.snapshots = SnapshotStore(self.directory)
        self.snapshots_retained = snapshots_retained
        # A snapshot newer than the surviving log (its tail was lost in a machine crash with
        # fsync "never"): continue the log from the snapshot.
        newest = self.snapshots.newest_valid(min_offset=self.log.log_end_offset + 1)
        if newest is not None:
            log.warning("log %s ends at %d but snapshot %d is newer; continuing from the snapshot",
                        self.directory, self.log.log_end_offset, newest)
            self.log.restart_at(newest)

    # -- appends (loop thread) -------------------------------------------------------------

    def append(self, payload: bytes) -> int:
        """Buffer one record; returns its offset."""
        return self.log.append(payload)

    def append_many(self, payloads: Iterable[bytes]) -> tuple[int, int]:
        """Buffer records in order; returns (first offset, end offset)."""
        return self.log.append_many(payloads)

    def flush(self) -> None:
        """Hand buffered records to the kernel."""
        self.log.flush()

    def sync(self) -> int:
        """fsync (worker thread allowed); returns the durable end offset."""
        return self.log.sync()

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def owned(self) -> bool:
        return self.log.owned

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def durable_end(self) -> int:
        return self.log.durable_end

    # -- restart -------------------------------------------------------------------------

    def load(self) -> Replay:
        """The newest valid snapshot usable with the surviving log, and the records after it.

        Raises `CorruptDataError` if records below the log start are gone and no valid
        snapshot covers them (the state cannot be rebuilt).
        """
        start, end = self.log.log_start_offset, self.log.log_end_offset
        offset = self.snapshots.newest_valid(max_offset=end, min_offset=start)
        if offset is None:
            if start > 0:
                raise CorruptDataError(
                    f"group-metadata partition {self.directory}: records below offset {start} "
                    f"were deleted and no valid snapshot at or after {start} exists")
            return Replay(0, iter(()), self.log.read_chunks(0))
        return Replay(offset, self.snapshots.payloads(offset), self.log.read_chunks(offset))

    def roll(self) -> bool:
        """A new segment from the log end on (see `SegmentedLog.roll`); call it when taking
        the cut of a snapshot, so the snapshot's offset is a segment's base."""
        return self.log.roll()

    def write_snapshot(self, offset: int, payloads: Iterable[bytes]) -> Path:
        """Persist a snapshot for `offset` (the payloads rebuild the state after records
        0..offset-1), keep the newest `snapshots_retained`, delete segments below the oldest
        kept one. Syncs the log first if `offset` is not yet durable. May run in a worker
        thread if `payloads` is a materialized list and nothing else deletes segments."""
        start, end = self.log.log_start_offset, self.log.log_end_offset
        if not start <= offset <= end:
            raise StorageError(
                f"snapshot offset {offset} outside the log [{start}, {end}] in {self.directory}")
        if offset > self.log.durable_end:
            self.log.sync()
        self.log.check_fence()
        path = self.snapshots.write(offset, payloads)
        # Only an owner prunes: a node that lost the partition meanwhile leaves the files
        # (its directory is sealed and no longer read).
        self.log.check_fence()
        kept = self.snapshots.offsets()
        for old in kept[:-self.snapshots_retained]:
            self.snapshots.delete(old)
        kept = kept[-self.snapshots_retained:]
        self.log.delete_segments_before(kept[0])
        return path

    def close(self) -> None:
        self.log.close()


class GroupMetadataLog:
    """The partitions of the group-metadata log this process has open.

    Outside a cluster (`open_all`) every partition is opened at once, from the partition
    directory itself. Within a cluster (data_dir.py) a partition is opened when this node
    comes to own it, in that ownership epoch's directory with its fence, and closed when it
    stops owning it; asking for a partition that is not open raises `NotOwnedError`.
    """

    def __init__(self, directory: Path, num_partitions: int = DEFAULT_PARTITIONS,
                 segment_bytes: int = 100 * 1024 * 1024, snapshots_retained: int = 2,
                 open_all: bool = True) -> None:
        if num_partitions <= 0:
            raise StorageConfigError(f"num_partitions must be positive, got {num_partitions}")
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.directory}: {exc}") from exc
        self._check_partition_count(num_partitions)
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.snapshots_retained = snapshots_retained
        self.partitions: dict[int, MetadataPartition] = {}
        if open_all:
            try:
                for p in range(num_partitions):
                    self.open_partition(p)
                fsync_directory(self.directory)
            except BaseException:
                self.close()
                raise

    def open_partition(self, p: int, plan=None, fence=None) -> MetadataPartition:
        """Open partition `p` (from an epoch plan with its fence, within a cluster)."""
        if p in self.partitions:
            raise StorageError(f"group-metadata partition {p} in {self.directory} is already open")
        part = MetadataPartition(self.directory / str(p), p, self.segment_bytes,
                                 self.snapshots_retained, plan, fence)
        self.partitions[p] = part
        return part

    def close_partition(self, p: int) -> None:
        """Close partition `p` (no fsync: sync it first if it matters)."""
        part = self.partitions.pop(p, None)
        if part is not None:
            part.close()

    def _check_partition_count(self, num_partitions: int) -> None:
        meta = self.directory / "partitions.json"
        if meta.exists():
            try:
                stored = json.loads(meta.read_text())["num_partitions"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CorruptDataError(f"cannot read {meta}: {exc}") from exc
            if stored != num_partitions:
                raise StorageConfigError(
                    f"{meta} says the group-metadata log has {stored} partitions but "
                    f"{num_partitions} were configured; changing it would move groups")
        else:
            write_atomically(meta, [json.dumps({"num_partitions": num_partitions}).encode()])

    def partition_for(self, group_id: str) -> int:
        """The partition that owns `group_id` (Kafka's hash)."""
        return partition_for_group(group_id, self.num_partitions)

    def partition(self, p: int) -> MetadataPartition:
        try:
            return self.partitions[p]
        except KeyError:
            if not 0 <= p < self.num_partitions:
                raise StorageError(f"no group-metadata partition {p} (there are {self.num_partitions})") from None
            raise NotOwnedError(f"group-metadata partition {p} is not owned by this node") from None

    def for_group(self, group_id: str) -> MetadataPartition:
        return self.partition(self.partition_for(group_id))

    def dirty_partitions(self) -> list[MetadataPartition]:
        """Partitions with appends not yet fsynced."""
        return [p for p in list(self.partitions.values()) if p.log_end_offset > p.durable_end]

    def sync(self) -> dict[int, int]:
        """fsync every partition with unsynced appends; returns {partition: durable end}."""
        return {p.partition: p.sync() for p in self.dirty_partitions()}

    def flush(self) -> None:
        for p in self.partitions.values():
            p.flush()

    def close(self) -> None:
        for p in self.partitions.values():
            p.close()
        self.partitions = {}
