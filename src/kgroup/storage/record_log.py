"""RecordLog: one partition of the group-metadata log, a segmented file of framed records.

Offsets are consecutive record numbers: the records of segment `<base>.log` have offsets
base, base+1, ... up to the next segment's base. On open every frame after the recovery point
(recovery_point.py: what an fsync covered when it was written) is CRC-checked, those before it
are trusted, and a read does not check either a second time: only frames
appended since the open are CRC-checked when read. The active segment is cut at its
first torn or corrupt frame (a warning on logger "kgroup.storage" says how many bytes were
cut). An older segment with a torn frame or a bad frame followed only by zeros (what a
machine crash leaves), or fewer records than the next
segment's base implies, was never fully fsynced (`sync` fsyncs a rolled segment before it
reports anything after it durable), so it is cut there and the later segments, which hold
nothing durable, are removed. Other damage in an older segment raises `CorruptDataError`.

Appends, flush, sync and threading follow `segments.SegmentedLog`.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterable, Iterator

from kgroup.storage.errors import CorruptDataError, OffsetOutOfRangeError, StorageError
from kgroup.storage.framing import (
    HEADER_SIZE,
    MAX_FRAME_BYTES,
    READ_CHUNK,
    FrameScan,
    frame_header,
    is_crash_artifact,
)
from kgroup.storage.segments import (
    FLUSH_THRESHOLD,
    SegmentedLog,
    log,
)


class RecordLog(SegmentedLog):
    """A segmented log of opaque, non-empty payloads numbered 0, 1, 2, ..."""

    def __init__(self, directory: Path, segment_bytes: int = 100 * 1024 * 1024, plan=None,
                 fence=None) -> None:
        super().__init__(directory, segment_bytes)
        self._open(plan, fence, "log directory")

    def _recover(self, plan=None) -> None:
        """Open the segments, CRC-check every frame, cut the first torn or corrupt tail.

        The active segment is cut at any bad frame. An older segment is cut only at a torn
        frame or a zero-filled tail (what a machine crash leaves); other damage there raises
        `CorruptDataError`. A stored recovery point (recovery_point.py) spares the bytes
        before it this scan. Segment `<base>.log` must hold exactly next_base - base records. A segment that
        is cut or falls short was never fully fsynced (sync fsyncs rolled segments before it
        reports them durable), so the segments after it hold nothing durable either: they
        are removed, with a warning, and the log continues from the cut. With an epoch plan
        an inherited segment is read up to its seal and never cut (see segments.py).
        """
        sources = self._open_sources(plan)
        if not sources and plan is None:
            self._new_active_segment(0)
            self._end_offset = self._durable_end = 0
            return
        # Below the recovery point everything is durable and was valid when written: the
        # segments before the one it names hold exactly their successor's base - base
        # records, and that one is scanned only from the point on.
        k, trusted, point = self._trusted_prefix(plan, sources)
        for i, source in enumerate(sources):
            seg = self._segment_from(source)
            base, path, fd = seg.base_offset, seg.path, seg.fd
            self._segments.append(seg)
            if i < k:
                seg.next_offset = sources[i + 1].base
                seg.verified = seg.size
                continue
            start, known = (trusted, point.offset - base) if i == k else (0, 0)
            scan = FrameScan(fd, start, seg.size)
            for _ in scan:
                pass
            scan.count += known
            later = sources[i + 1:]
            if scan.problem is not None:
                if later and not is_crash_artifact(fd, scan):
                    raise CorruptDataError(
                        f"segment {path}: {scan.problem}, followed by non-zero data; an older "
                        "segment is damaged (not a torn write), refusing to cut durable records")
                self._cut_file(seg, scan.valid_end, scan.problem)
            seg.next_offset = base + scan.count
            seg.verified = seg.size  # every frame up to here passed its CRC check
            if not later:
                break
            next_base = later[0].base
            if seg.next_offset > next_base:
                raise CorruptDataError(
                    f"segment {path} holds {scan.count} records, more than the "
                    f"{next_base - base} its successor {later[0].name} leaves room for")
            if seg.next_offset < next_base:
                log.warning("segment %s ends at offset %d, short of the next segment's base %d: "
                            "%s %d later segment(s) that were never durable", path, seg.next_offset,
                            next_base, "removing" if seg.own else "not inheriting", len(later))
                self._drop_sources(later)
                break
        self._finish_open(plan, snapshot_limit=self._segments[-1].next_offset if self._segments else 0)

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
            if self.fence is not None:
                self.check_fence()  # fail fast; the write itself is checked at flush
            n = HEADER_SIZE + len(payload)
            seg = self._write_locked(n)
            self._buffer_copy(frame_header(payload), payload)
            seg.size += n
            offset = self._end_offset
            self._end_offset = seg.next_offset = offset + 1
            if self._pending_bytes >= FLUSH_THRESHOLD:
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
        the call, CRC-checked (on open, or now). Raises `CorruptDataError` on a bad frame."""
        chunks = self.read_chunks(offset)

        def numbered() -> Iterator[tuple[int, bytes]]:
            current = offset
            for payloads in chunks:
                for payload in payloads:
                    yield current, payload
                    current += 1

        return numbered()

    def read_chunks(self, offset: int) -> Iterator[list[bytes]]:
        """The payloads of the records from `offset` to the end offset at the time of the
        call, in order, a list per read (a few MB): what a replay wants, without a Python
        generator step per record. Frames verified on open are not CRC-checked again;
        later ones are. Raises `CorruptDataError` on a bad frame."""
        with self._lock:
            self._check_writable()
            self._flush_locked()
            end = self._end_offset
            start = self.log_start_offset
            if not start <= offset <= end:
                raise OffsetOutOfRangeError(
                    f"log {self.directory}: offset {offset} outside [{start}, {end}]")
            chosen = [(s.base_offset, s.next_offset, s.path, s.size, s.verified)
                      for s in self._segments if s.next_offset > offset]
            fds = []
            try:
                for chosen_segment in chosen:
                    fds.append(os.open(chosen_segment[2], os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
            except OSError as exc:
                for fd in fds:
                    os.close(fd)
                raise StorageError(f"cannot open segment for reading in {self.directory}: {exc}") from exc
        return self._read_segments(offset, chosen, fds)

    def _read_segments(self, offset: int, chosen: list, fds: list[int]) -> Iterator[list[bytes]]:
        try:
            for (base, next_offset, path, size, verified), fd in zip(chosen, fds):
                current = base
                position = 0
                # 1. The bytes checked on open: frames are only split, not checked again.
                if verified:
                    for payloads in _split_frames(fd, min(verified, size), path):
                        if current + len(payloads) > offset:
                            yield payloads[offset - current:] if current < offset else payloads
                        current += len(payloads)
                    position = min(verified, size)
                # 2. Frames appended since the open: CRC-checked as they are read.
                if position < size:
                    scan = FrameScan(fd, position, size)
                    payloads = []
                    for payload in scan:
                        if current >= offset:
                            payloads.append(payload)
                            if len(payloads) >= _CHUNK_RECORDS:
                                yield payloads
                                payloads = []
                        current += 1
                    if scan.problem is not None:
                        raise CorruptDataError(f"segment {path}: {scan.problem}")
                    if payloads:
                        yield payloads
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
        """Drop every segment and continue with an empty log at `offset` > log end (used
        when a snapshot is newer than the surviving log: it covers all records below)."""
        with self._lock:
            self._check_writable()
            if offset <= self._end_offset:
                raise StorageError(f"log {self.directory}: restart_at({offset}) is not past the end {self._end_offset}")
            self._flush_locked()
            old = self._segments
            self._segments = []
            self._end_offset = offset
            self._new_active_segment(offset)
            for seg in old:
                self._delete_segment(seg)


_LENGTH = struct.Struct(">I")
_CHUNK_RECORDS = 65536  # payloads per list when frames are CRC-checked as they are read


def _split_frames(fd: int, end: int, path: Path) -> Iterator[list[bytes]]:
    """The payloads of the frames in bytes [0, end) of `fd`, a list per read, WITHOUT the
    CRC check: only for bytes whose frames were verified earlier by this process."""
    unpack = _LENGTH.unpack_from
    chunk_size = READ_CHUNK
    pos = 0
    while pos < end:
        data = os.pread(fd, min(chunk_size, end - pos), pos)
        n = len(data)
        if n == 0:
            raise CorruptDataError(f"segment {path} is shorter than the {end} bytes verified on open")
        payloads = []
        append = payloads.append
        i = 0
        while n - i >= HEADER_SIZE:
            j = i + HEADER_SIZE + unpack(data, i)[0]
            if j > n:
                break
            append(data[i + HEADER_SIZE:j])
            i = j
        if i == 0:  # one frame larger than the chunk: read it whole next time
            if n < HEADER_SIZE:
                raise CorruptDataError(f"segment {path}: torn frame at byte {pos} of verified bytes")
            length = unpack(data, 0)[0]
            if length > MAX_FRAME_BYTES or pos + HEADER_SIZE + length > end:
                raise CorruptDataError(f"segment {path}: bad frame length {length} at byte {pos}")
            chunk_size = HEADER_SIZE + length
            continue
        pos += i
        yield payloads
