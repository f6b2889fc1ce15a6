"""Segmented append-only files with buffered appends and group-commit fsync.

How this works: a log is a directory of segment files named `<base offset, 20 digits>.log`;
only the last (active) segment is written. `append` adds bytes to an in-memory buffer (cheap,
meant for the event loop); `flush` hands the buffer to the kernel with write(2) (the data
then survives `kill -9` of the process); `sync` flushes and fsyncs (the data then survives a
machine crash) and moves `durable_end` forward.

Threading contract: `append`, `flush`, reads, retention, `close` and `delete` run on one
thread (the broker's event loop). `sync` may run in a worker thread at the same time. It takes
the log's lock only to flush the buffer and to `dup` the file descriptors that need an fsync
(the active segment, segments rolled since the last sync, and a flag for the directory when a
segment file was created); it then fsyncs those duplicates *without* the lock, so appends go
on while the disk works, and finally sets `durable_end` to the end offset it captured. The
duplicated descriptors keep the files alive even if the loop closes or deletes the log
meanwhile. Every offset below the value `sync` returns is on disk. After the fsync, `sync`
may store the recovery point of what it covered (recovery_point.py; every few MB, under a
lock of its own, so concurrent syncs and `close` never write it out of order).

A failed write or fsync puts the log in a failed state: later appends and syncs raise
`LogFailedError` (after a failed fsync Linux may drop the dirty pages, so retrying proves
nothing; the broker should stop).

Fencing (cluster ownership, see epoch_table.py and epoch_dirs.py): a log opened for an
ownership epoch carries a `fence`. It is checked where bytes reach the file: immediately
before and after each write(2), after each fsync (before `sync` reports anything durable),
and before a segment file is created or removed. A failed check raises `FencedError` and
leaves the log fenced: it refuses every later write, and nothing it wrote after the check
failed is acknowledged (a new owner reads only up to the seal it measured). Segments a log
opened from an earlier epoch (`own` False) are never written, cut or removed by it, except
that retention and snapshots may drop their names from this epoch's directory.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.storage.atomic_files import fsync_directory
from kgroup.storage.errors import FencedError, LogClosedError, LogFailedError, LogHandedOverError, StorageError
from kgroup.storage.recovery_point import (
    CHECKPOINT_INTERVAL_BYTES,
    RecoveryPoint,
    read_recovery_point,
    trusted_prefix,
    write_recovery_point,
)

log = logging.getLogger("kgroup.storage")

SEGMENT_SUFFIX = ".log"
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
# Appends hand the buffer to the kernel once it holds this much, bounding memory use.
FLUSH_THRESHOLD = 1024 * 1024
# Pieces per pwritev (the kernel's IOV_MAX).
_IOV_MAX = 1024


def segment_name(base_offset: int) -> str:
    """File name of the segment whose first offset is `base_offset`."""
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def list_segment_files(directory: Path) -> list[tuple[int, Path]]:
    """(base offset, path) of the segment files in `directory`, sorted by base offset."""
    found = []
    for entry in os.scandir(directory):
        m = _SEGMENT_NAME.match(entry.name)
        if m:
            found.append((int(m.group(1)), Path(entry.path)))
    found.sort()
    return found


@dataclass(slots=True)
class Segment:
    """One segment file. `size` counts buffered bytes too (for the active segment);
    `next_offset` is the offset after its last record; `verified` how many leading bytes
    were CRC-checked on open; `index_offsets`/`index_positions`
    are a sparse index (batch base offset -> byte position) and `max_timestamp` the
    largest batch maxTimestamp (-1 if none), both used by partition logs only."""

    base_offset: int
    path: Path
    fd: int
    size: int
    next_offset: int
    index_offsets: list[int] = field(default_factory=list)
    index_positions: list[int] = field(default_factory=list)
    max_timestamp: int = -1
    last_indexed_position: int = -1
    # Bytes [0, verified) were CRC-checked frame by frame when this process opened the log
    # (record logs only); reads need not check them again.
    verified: int = 0
    # Written by this node's epoch (False: sealed, inherited from an earlier owner: never
    # written or cut; `size` is its sealed length).
    own: bool = True


class SegmentedLog:
    """Base class: segment list, buffered appends, rolling, flush and thread-safe sync.

    Subclasses open/recover the segments (`_recover`) and define what an append means.
    """

    def __init__(self, directory: Path, segment_bytes: int) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._segments: list[Segment] = []
        # Appended bytes not yet handed to the kernel, in order: small appends are copied
        # into a trailing bytearray, large ones (record batches) kept as they came, by
        # reference, and written with one pwritev.
        self._pending: list[bytes | bytearray | memoryview] = []
        self._pending_bytes = 0
        self._pending_fsync: list[int] = []  # dup'ed fds of rolled, not yet fsynced segments
        self._dir_dirty = False
        self._end_offset = 0
        self._durable_end = 0
        self._failed: str | None = None
        self._closed = False
        self._handed_over = False  # closed because this node gave the unit up
        # The ownership fence (None: a log outside any cluster, e.g. a tool or a test).
        self.fence = None
        self._fenced: str | None = None
        # Directories a brand-new log fsyncs once, with its first sync (epoch_dirs.py).
        self._parents_to_sync: list[Path] = []
        # The recovery point stored in the directory (recovery_point.py; None: none that
        # fits), and the lock that orders its writes (sync threads, close).
        self._recovery_point: RecoveryPoint | None = None
        self._checkpoint_lock = threading.Lock()

    # -- state ---------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """The offset the next append will get."""
        return self._end_offset

    @property
    def durable_end(self) -> int:
        """Every offset below this has been fsynced."""
        return self._durable_end

    @property
    def size_bytes(self) -> int:
        """Total bytes of all segments, buffered bytes included."""
        return sum(s.size for s in self._segments)

    def segment_base_offsets(self) -> list[int]:
        """Base offsets of the segments, oldest first."""
        return [s.base_offset for s in self._segments]

    def _check_writable(self) -> None:
        if self._closed:
            if self._handed_over:
                raise LogHandedOverError(f"log {self.directory} was handed over to another node")
            raise LogClosedError(f"log {self.directory} is closed")
        if self._failed is not None:
            raise LogFailedError(f"log {self.directory} failed earlier and refuses writes: {self._failed}")
        if self._fenced is not None:
            raise FencedError(self._fenced)

    def check_fence(self) -> None:
        """Raise FencedError (and stay fenced) unless this node still owns the log."""
        fence = self.fence
        if fence is not None:
            try:
                fence.check()
            except FencedError as exc:
                self._fenced = f"log {self.directory}: {exc}"
                raise FencedError(self._fenced) from None

    @property
    def fenced(self) -> bool:
        return self._fenced is not None

    @property
    def owned(self) -> bool:
        """Whether this node still owns the log (a memory read): what a read checks before
        it answers, so a node that lost the log never serves it, even before it noticed."""
        fence = self.fence
        return self._fenced is None and (fence is None or fence.holds)

    # -- opening -------------------------------------------------------------------------

    def _open_segment_fd(self, path: Path, create: bool) -> int:
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open segment {path}: {exc}") from exc

    def _cut_file(self, segment: Segment, valid_end: int, reason: str) -> None:
        """Truncate a segment file at `valid_end` (recovery of a torn or corrupt tail); a
        sealed segment of an earlier epoch is only read up to there, never truncated."""
        cut = segment.size - valid_end
        if not segment.own:
            log.info("reading %s only up to byte %d (%d bytes after it ignored): %s",
                     segment.path, valid_end, cut, reason)
            segment.size = valid_end
            return
        log.warning("cut %d bytes from the tail of %s: %s", cut, segment.path, reason)
        try:
            os.ftruncate(segment.fd, valid_end)
            os.fsync(segment.fd)
        except OSError as exc:
            raise StorageError(f"cannot truncate {segment.path} to {valid_end} bytes: {exc}") from exc
        segment.size = valid_end

    # -- opening from an epoch plan (epoch_dirs.py) or from the directory itself ----------

    def _open(self, plan, fence, what: str) -> None:
        """Create the directory if needed and recover the segments (subclass `_recover`)."""
        self.fence = fence
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {what} {self.directory}: {exc}") from exc
        try:
            self._recover(plan)
        except BaseException:
            self._abandon_open(plan)
            raise
        # Everything recovered was fsynced (`_sync_recovered`): store the point it reached
        # if it differs from the one found (higher after a scanned tail, lower after a cut).
        point = self._recovered_point()
        if point is not None and point != self._recovery_point and self.owned:
            self._store_recovery_point(point, moved_down_allowed=True)

    def _recover(self, plan) -> None:
        raise NotImplementedError

    # -- the recovery point (recovery_point.py) ---------------------------------------------

    def _trusted_prefix(self, plan, sources: list) -> tuple[int, int, RecoveryPoint | None]:
        """Read the stored recovery point and fit it to `sources`: (index of the segment it
        names, bytes of that segment trusted, the point), or (-1, 0, None) when it covers
        nothing (then the whole log is scanned)."""
        point = plan.recovery_point if plan is not None else read_recovery_point(self.directory)
        k, trusted = trusted_prefix(point, sources, self.directory)
        if k < 0:
            point = None
        # What the directory this log writes in holds: a takeover's new directory has none.
        if plan is None or plan.resumed:
            self._recovery_point = point
        return k, trusted, point

    def _recovered_point(self) -> RecoveryPoint | None:
        """The point at the end of the last non-empty segment (right after an open)."""
        for seg in reversed(self._segments):
            if seg.size > 0:
                return RecoveryPoint(seg.base_offset, seg.size, seg.next_offset)
        return None

    def _store_recovery_point(self, point: RecoveryPoint, moved_down_allowed: bool = False) -> None:
        """Write `point` (which must be durable) unless a later one was stored meanwhile
        by another thread (an open after a cut moves it down); a failed write keeps the
        old, still true, point."""
        with self._checkpoint_lock:
            stored = self._recovery_point
            if (not moved_down_allowed and stored is not None
                    and (stored.base, stored.position) >= (point.base, point.position)):
                return
            if not self.owned:
                return  # the directory is a new owner's to read now, not ours to write
            if write_recovery_point(self.directory, point):
                self._recovery_point = point

    def _checkpoint_due(self, point: RecoveryPoint) -> bool:
        stored = self._recovery_point
        return (stored is None or stored.base != point.base
                or point.position - stored.position >= CHECKPOINT_INTERVAL_BYTES)

    def _open_sources(self, plan) -> list:
        """The segments to open: a plan's (already open, measured), or every segment file
        in the log directory (this process's own, as outside a cluster)."""
        from kgroup.storage.epoch_dirs import SourceSegment  # noqa: PLC0415 (cycle)

        if plan is not None:
            if plan.resumed or plan.new:
                self.directory = plan.target
            self._parents_to_sync = plan.parents_to_sync
            return list(plan.segments)
        sources = []
        for base, path in list_segment_files(self.directory):
            fd = self._open_segment_fd(path, create=False)
            sources.append(SourceSegment(base, path.name, path, fd, True, os.fstat(fd).st_size))
        return sources

    @staticmethod
    def _segment_from(source) -> Segment:
        return Segment(source.base, source.path, source.fd, source.limit, source.base, own=source.own)

    def _drop_sources(self, dropped: list) -> None:
        """Segments after a cut were never durable: this epoch's files are removed, an
        earlier epoch's are simply not inherited."""
        for source in dropped:
            os.close(source.fd)
            if source.own:
                os.unlink(source.path)
                self._dir_dirty = True

    def _finish_open(self, plan, snapshot_limit: int | None = None, log_start: int | None = None) -> None:
        """After recovery: drop an empty inherited tail, fsync what was found, build this
        epoch's directory (a takeover), and make sure the active segment is this epoch's."""
        end = self._segments[-1].next_offset if self._segments else 0
        while self._segments and not self._segments[-1].own and self._segments[-1].size == 0:
            os.close(self._segments.pop().fd)
        if plan is not None:
            # Sources past the kept segments were closed (dropped, or an empty tail); the
            # kept ones' descriptors now belong to this log.
            del plan.segments[len(self._segments):]
        if self._segments:
            self._sync_recovered()
        if plan is not None and not (plan.resumed or plan.new):
            # The new directory gets the point of what was just fsynced, in the same commit.
            point = self._recovered_point()
            plan.commit([(source, seg.size) for source, seg in zip(plan.segments, self._segments)],
                        snapshot_limit, log_start, point.encode() if point is not None else None)
            self._recovery_point = point
            self.directory = plan.target
            for seg in self._segments:
                seg.path = plan.target / seg.path.name
        if plan is not None:
            plan.segments = []
        if not self._segments or not self._segments[-1].own:
            self._new_active_segment(end)
        self._end_offset = self._durable_end = end

    def _abandon_open(self, plan) -> None:
        """Opening failed: close every descriptor, the log's and the plan's."""
        closed = set()
        for seg in self._segments:
            closed.add(seg.fd)
            os.close(seg.fd)
        self._segments = []
        if plan is not None:
            for source in plan.segments:
                if source.fd not in closed:
                    try:
                        os.close(source.fd)
                    except OSError:
                        pass
            plan.segments = []

    def _sync_recovered(self) -> None:
        """fsync what recovery found (it may sit only in the page cache after a `kill -9`),
        so that `durable_end` = end offset is true from the start."""
        try:
            for seg in self._segments:
                os.fsync(seg.fd)
        except OSError as exc:
            raise StorageError(f"fsync of recovered segments in {self.directory} failed: {exc}") from exc
        fsync_directory(self.directory)
        self._dir_dirty = False

    def _new_active_segment(self, base_offset: int) -> Segment:
        self.check_fence()
        path = self.directory / segment_name(base_offset)
        fd = self._open_segment_fd(path, create=True)
        seg = Segment(base_offset=base_offset, path=path, fd=fd, size=0, next_offset=base_offset)
        self._segments.append(seg)
        self._dir_dirty = True
        return seg

    # -- writing -------------------------------------------------------------------------

    def roll(self) -> bool:
        """Start a new segment at the end offset now (False: the active one is still
        empty, nothing to do). A group shard rolls as it takes a snapshot: a restart then
        reads the log from the segment the snapshot begins, and the segments below the
        older retained snapshot can be deleted, however small they are."""
        with self._lock:
            self._check_writable()
            if self._segments[-1].size == 0:
                return False
            self._roll_locked()
            return True

    def _roll_locked(self) -> None:
        """Start a new active segment at the end offset (lock held)."""
        self._flush_locked()
        old = self._segments[-1]
        self._pending_fsync.append(os.dup(old.fd))
        self._new_active_segment(self._end_offset)

    def _write_locked(self, nbytes: int) -> Segment:
        """The segment the next `nbytes` go to, rolling first if they would overflow it."""
        active = self._segments[-1]
        if active.size > 0 and active.size + nbytes > self.segment_bytes:
            self._roll_locked()
            active = self._segments[-1]
        return active

    def _buffer_copy(self, *pieces: bytes | memoryview) -> None:
        """Buffer small pieces by copying them (lock held)."""
        pending = self._pending
        if not pending or type(pending[-1]) is not bytearray:
            pending.append(bytearray())
        tail = pending[-1]
        for piece in pieces:
            tail += piece
            self._pending_bytes += len(piece)

    def _buffer_ref(self, piece: bytes | memoryview) -> None:
        """Buffer a large immutable piece without copying it (lock held)."""
        self._pending.append(piece)
        self._pending_bytes += len(piece)

    def _flush_locked(self) -> None:
        pending = self._pending
        if not pending:
            return
        self.check_fence()
        active = self._segments[-1]
        position = active.size - self._pending_bytes  # where the buffered bytes start in the file
        try:
            while pending:
                n = os.pwritev(active.fd, pending[:_IOV_MAX], position)
                position += n
                self._pending_bytes -= n
                # Drop what was written; a piece written in part keeps its tail.
                done = 0
                while done < len(pending) and n >= len(pending[done]):
                    n -= len(pending[done])
                    done += 1
                del pending[:done]
                if n:
                    pending[0] = memoryview(pending[0])[n:]
        except OSError as exc:
            self._failed = f"write to {active.path} failed: {exc}"
            raise LogFailedError(self._failed) from exc
        # A write that raced a takeover is never acknowledged (the new owner's seal may or
        # may not hold it; either is consistent, since nobody was told it happened).
        self.check_fence()

    def flush(self) -> None:
        """Hand buffered appends to the kernel (they then survive a crash of this process)."""
        with self._lock:
            self._check_writable()
            self._flush_locked()

    def sync(self) -> int:
        """Flush and fsync everything appended before the call; returns the new durable end.

        Safe to call from a worker thread while the loop keeps appending (see module doc).
        """
        with self._lock:
            self._check_writable()
            self._flush_locked()
            target = self._end_offset
            fds = self._pending_fsync
            self._pending_fsync = []
            active = self._segments[-1]
            fds.append(os.dup(active.fd))
            point = RecoveryPoint(active.base_offset, active.size, target)
            dir_dirty = self._dir_dirty
            self._dir_dirty = False
            parents = self._parents_to_sync if dir_dirty else []
        try:
            for fd in fds:
                os.fsync(fd)
            if dir_dirty:
                fsync_directory(self.directory)
                for parent in parents:
                    fsync_directory(parent)
        except (OSError, StorageError) as exc:
            with self._lock:
                # A new owner removes the old epoch's directory: not a disk failure.
                self.check_fence()
                self._failed = f"fsync in {self.directory} failed: {exc}"
            raise LogFailedError(self._failed) from exc
        finally:
            for fd in fds:
                os.close(fd)
        with self._lock:
            if parents:
                self._parents_to_sync = []
            # Durable, but reported only if no takeover happened meanwhile.
            self.check_fence()
            if target > self._durable_end:
                self._durable_end = target
            durable = self._durable_end
        # Everything up to `point` is on disk now: move the recovery point there once enough
        # was written since the last one (a crash before this only costs a longer scan).
        if self._checkpoint_due(point):
            self._store_recovery_point(point)
        return durable

    # -- removing ------------------------------------------------------------------------

    def _delete_segment(self, segment: Segment) -> None:
        """Remove a (non-active) segment file (loop thread). Only this epoch's name for it
        goes: an earlier epoch's directory is not touched."""
        self.check_fence()
        try:
            os.close(segment.fd)
            segment.path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete segment {segment.path}: {exc}") from exc
        self._dir_dirty = True

    def close(self, handed_over: bool = False) -> None:
        """Flush buffered appends and close the files (no fsync: call `sync` first if the
        policy asks for it). Idempotent. `handed_over`: this node gave the log's unit up,
        so later use raises LogHandedOverError (another node serves it)."""
        if self._closed:
            return
        self._handed_over = handed_over
        point = None
        with self._lock:
            if (self._failed is None and self._fenced is None and self._segments
                    and self._durable_end == self._end_offset and not self._pending):
                active = self._segments[-1]
                point = RecoveryPoint(active.base_offset, active.size, self._end_offset)
                if active.size == 0 or point == self._recovery_point:
                    point = None
        # A clean shutdown syncs first: then the next open scans nothing.
        if point is not None:
            self._store_recovery_point(point)
        with self._lock:
            try:
                if self._failed is None and self._fenced is None:
                    self._flush_locked()
            except FencedError:
                pass  # nothing more may be written; the buffer is dropped
            finally:
                self._closed = True
                for seg in self._segments:
                    os.close(seg.fd)
                for fd in self._pending_fsync:
                    os.close(fd)
                self._pending_fsync = []
