"""RecordLog: one partition of the group-metadata log, a segmented file of framed records.

Offsets are consecutive record numbers: the records of segment `<base>.log` have offsets
base, base+1, ... up to the next segment's base. On open the active (last) segment is
scanned and cut at the first torn or corrupt frame (a warning on logger "kgroup.storage"
says how many bytes were cut); older segments are checked as they are read, and a bad frame
there raises `CorruptDataError` (it was fsynced before the roll was reported durable, so
it is damage, not a crash artifact).

Appends, flush, sync and threading follow `segments.SegmentedLog`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from kgroup.storage.errors import CorruptDataError, OffsetOutOfRangeError, StorageError
from kgroup.storage.framing import HEADER_SIZE, FrameScan, frame_header
from kgroup.storage.segments import (
    FLUSH_THRESHOLD,
    Segment,
    SegmentedLog,
    list_segment_files,
    log,
)


class RecordLog(SegmentedLog):
    """A segmented log of opaque, non-empty payloads numbered 0, 1, 2, ..."""

    def __init__(self, directory: Path, segment_bytes: int = 100 * 1024 * 1024) -> None:
        super().__init__(directory, segment_bytes)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create log directory {self.directory}: {exc}") from exc
        self._recover()

    def _recover(self) -> None:
        files = list_segment_files(self.directory)
        if not files:
            self._new_active_segment(0)
            self._end_offset = self._durable_end = 0
            return
        for i, (base, path) in enumerate(files):
            fd = self._open_segment_fd(path, create=False)
            size = os.fstat(fd).st_size
            next_offset = files[i + 1][0] if i + 1 < len(files) else base
            if i + 1 < len(files) and files[i + 1][0] < base:
                raise CorruptDataError(f"segment {files[i + 1][1]} starts before {path} ends")
            self._segments.append(Segment(base, path, fd, size, next_offset))
        active = self._segments[-1]
        scan = FrameScan(active.fd, 0, active.size)
        for _ in scan:
            pass
        if scan.problem is not None:
            self._cut_file(active, scan.valid_end, scan.problem)
        active.next_offset = active.base_offset + scan.count
        self._end_offset = self._durable_end = active.next_offset

    # -- state ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset still stored."""
        return self._segments[0].base_offset

    # -- writing -------------------------------------------------------------------------

    def append(self, payload: bytes) -> int:
        """Buffer one record; returns its offset. Durable only after a `sync()` whose
        result is greater than that offset."""
        if not payload:
            raise StorageError(f"log {self.directory}: empty payloads cannot be appended")
        with self._lock:
            self._check_writable()
            n = HEADER_SIZE + len(payload)
            seg = self._write_locked(n)
            buf = self._buffer
            buf += frame_header(payload)
            buf += payload
            seg.size += n
            offset = self._end_offset
            self._end_offset = seg.next_offset = offset + 1
            if len(buf) >= FLUSH_THRESHOLD:
                self._flush_locked()
            return offset

    def append_many(self, payloads: Iterable[bytes]) -> tuple[int, int]:
        """Buffer several records in order; returns (first offset, end offset)."""
        first = self._end_offset
        for payload in payloads:
            self.append(payload)
        return first, self._end_offset

    # -- reading -------------------------------------------------------------------------

    def read_from(self, offset: int) -> Iterator[tuple[int, bytes]]:
        """(offset, payload) of every record from `offset` to the end offset at the time of
        the call, CRC-checked. Raises `CorruptDataError` on a bad frame."""
        with self._lock:
            self._check_writable()
            self._flush_locked()
            end = self._end_offset
            start = self.log_start_offset
            if not start <= offset <= end:
                raise OffsetOutOfRangeError(
                    f"log {self.directory}: offset {offset} outside [{start}, {end}]")
            chosen = [(s.base_offset, s.next_offset, s.path, s.size)
                      for s in self._segments if s.next_offset > offset]
            fds = []
            try:
                for _, _, path, _ in chosen:
                    fds.append(os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
            except OSError as exc:
                for fd in fds:
                    os.close(fd)
                raise StorageError(f"cannot open segment for reading in {self.directory}: {exc}") from exc
        return self._read_segments(offset, chosen, fds)

    def _read_segments(self, offset: int, chosen: list, fds: list[int]) -> Iterator[tuple[int, bytes]]:
        try:
            for (base, next_offset, path, size), fd in zip(chosen, fds):
                scan = FrameScan(fd, 0, size)
                current = base
                for payload in scan:
                    if current >= offset:
                        yield current, payload
                    current += 1
                if scan.problem is not None:
                    raise CorruptDataError(f"segment {path}: {scan.problem}")
                if current != next_offset:
                    raise CorruptDataError(
                        f"segment {path} holds {current - base} records, expected "
                        f"{next_offset - base} (offsets {base}..{next_offset - 1})")
        finally:
            for fd in fds:
                os.close(fd)

    # -- removing ------------------------------------------------------------------------

    def delete_segments_before(self, offset: int) -> int:
        """Delete the segments whose records all lie below `offset` (never the active one);
        returns how many were deleted."""
        deleted = 0
        with self._lock:
            self._check_writable()
            while len(self._segments) > 1 and self._segments[0].next_offset <= offset:
                seg = self._segments.pop(0)
                self._delete_segment(seg)
                deleted += 1
        if deleted:
            log.info("deleted %d segments below offset %d in %s", deleted, offset, self.directory)
        return deleted

    def restart_at(self, offset: int) -> None:
        """Start a new empty active segment at `offset` > log end (used when a snapshot is
        newer than the surviving log: the records in between are covered by the snapshot)."""
        with self._lock:
            self._check_writable()
            if offset <= self._end_offset:
                raise StorageError(f"log {self.directory}: restart_at({offset}) is not past the end {self._end_offset}")
            self._flush_locked()
            old = self._segments[-1]
            self._pending_fsync.append(os.dup(old.fd))
            self._end_offset = offset
            self._new_active_segment(offset)
