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
meanwhile. Every offset below the value `sync` returns is on disk.

A failed write or fsync puts the log in a failed state: later appends and syncs raise
`LogFailedError` (after a failed fsync Linux may drop the dirty pages, so retrying proves
nothing; the broker should stop).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.storage.atomic_files import fsync_directory
from kgroup.storage.errors import LogClosedError, LogFailedError, StorageError

log = logging.getLogger("kgroup.storage")

SEGMENT_SUFFIX = ".log"
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
# Appends hand the buffer to the kernel once it holds this much, bounding memory use.
FLUSH_THRESHOLD = 1024 * 1024


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


class SegmentedLog:
    """Base class: segment list, buffered appends, rolling, flush and thread-safe sync.

    Subclasses open/recover the segments (`_recover`) and define what an append means.
    """

    def __init__(self, directory: Path, segment_bytes: int) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._segments: list[Segment] = []
        self._buffer = bytearray()
        self._pending_fsync: list[int] = []  # dup'ed fds of rolled, not yet fsynced segments
        self._dir_dirty = False
        self._end_offset = 0
        self._durable_end = 0
        self._failed: str | None = None
        self._closed = False

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
            raise LogClosedError(f"log {self.directory} is closed")
        if self._failed is not None:
            raise LogFailedError(f"log {self.directory} failed earlier and refuses writes: {self._failed}")

    # -- opening -------------------------------------------------------------------------

    def _open_segment_fd(self, path: Path, create: bool) -> int:
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open segment {path}: {exc}") from exc

    def _cut_file(self, segment: Segment, valid_end: int, reason: str) -> None:
        """Truncate a segment file at `valid_end` (recovery of a torn or corrupt tail)."""
        cut = segment.size - valid_end
        log.warning("cut %d bytes from the tail of %s: %s", cut, segment.path, reason)
        try:
            os.ftruncate(segment.fd, valid_end)
            os.fsync(segment.fd)
        except OSError as exc:
            raise StorageError(f"cannot truncate {segment.path} to {valid_end} bytes: {exc}") from exc
        segment.size = valid_end

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
        path = self.directory / segment_name(base_offset)
        fd = self._open_segment_fd(path, create=True)
        seg = Segment(base_offset=base_offset, path=path, fd=fd, size=0, next_offset=base_offset)
        self._segments.append(seg)
        self._dir_dirty = True
        return seg

    # -- writing -------------------------------------------------------------------------

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

    def _flush_locked(self) -> None:
        buf = self._buffer
        if not buf:
            return
        active = self._segments[-1]
        view = memoryview(buf)
        written = 0
        position = active.size - len(buf)  # where the buffered bytes start in the file
        try:
            while written < len(buf):
                written += os.pwrite(active.fd, view[written:], position + written)
        except OSError as exc:
            self._failed = f"write to {active.path} failed: {exc}"
            raise LogFailedError(self._failed) from exc
        finally:
            view.release()
            del buf[:written]

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
            fds.append(os.dup(self._segments[-1].fd))
            dir_dirty = self._dir_dirty
            self._dir_dirty = False
        try:
            for fd in fds:
                os.fsync(fd)
            if dir_dirty:
                fsync_directory(self.directory)
        except (OSError, StorageError) as exc:
            with self._lock:
                self._failed = f"fsync in {self.directory} failed: {exc}"
            raise LogFailedError(self._failed) from exc
        finally:
            for fd in fds:
                os.close(fd)
        with self._lock:
            if target > self._durable_end:
                self._durable_end = target
            return self._durable_end

    # -- removing ------------------------------------------------------------------------

    def _delete_segment(self, segment: Segment) -> None:
        """Remove a (non-active) segment file (loop thread)."""
        try:
            os.close(segment.fd)
            segment.path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete segment {segment.path}: {exc}") from exc
        self._dir_dirty = True

    def close(self) -> None:
        """Flush buffered appends and close the files (no fsync: call `sync` first if the
        policy asks for it). Idempotent."""
        if self._closed:
            return
        with self._lock:
            try:
                if self._failed is None:
                    self._flush_locked()
            finally:
                self._closed = True
                for seg in self._segments:
                    os.close(seg.fd)
                for fd in self._pending_fsync:
                    os.close(fd)
                self._pending_fsync = []
