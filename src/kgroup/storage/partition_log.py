"""PartitionLog: the log of one topic partition, record batches stored as received.

How this works: `append(batch)` takes a v2 record batch (validated by the broker), writes the
next offset into its baseOffset field (bytes 0..8, outside the CRC, so the batch CRC stays
valid) and buffers it on the active segment. Segments are `<base offset, 20 digits>.log`;
each keeps in memory a sparse index (batch base offset -> byte position, one entry per
`index_interval_bytes`), its next offset and its largest maxTimestamp, all rebuilt on open by
walking the batch headers. On open, batches of the active segment after the recovery point
(recovery_point.py: what an fsync covered when it was written) are also CRC-checked and
it is cut at its first torn (batchLength past EOF) or invalid batch, with a warning on logger
"kgroup.storage". An older segment is cut only at a crash artifact (torn batch, zero-filled
tail), and then the later segments, which were never durable, are removed (as Kafka's
recovery does); other damage there raises `CorruptDataError`.

Retention (`apply_retention(now_ms)`) deletes whole segments from the oldest, never the
active one, except that when every batch is past `retention_ms` the active segment is rolled
first so it can go too (Kafka does the same). Storage never reads the clock: the caller
passes `now_ms`. `log_start_offset` moves with deletion and with `delete_records_before`
(persisted in `log-start-offset`).

Durability and threading: see `segments.py`.
"""

from __future__ import annotations

import os
import shutil
import struct
from bisect import bisect_left, bisect_right
from pathlib import Path

import crc32c

from kgroup.batch_layout import BASE_AND_LENGTH, LAST_OFFSET_DELTA, LAST_OFFSET_DELTA_AT
from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.batch_header import (
    BASE_OFFSET,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    header_problem,
    parse_header,
)
from kgroup.storage import leader_epochs
from kgroup.storage.config import LogConfig
from kgroup.storage.errors import (
    CorruptDataError,
    InvalidBatchError,
    OffsetOutOfRangeError,
    StorageError,
)
from kgroup.storage.framing import zero_tail_start
from kgroup.storage.records_slice import RecordsSlice
from kgroup.storage.segments import (
    FLUSH_THRESHOLD,
    Segment,
    SegmentedLog,
    log,
)

LOG_START_FILE = "log-start-offset"
# A fetch answer smaller than this is read into memory: below it, a pread and a copy cost
# less than handing the socket a file range.
SLICE_MIN_BYTES = 64 * 1024
# The partition leader epoch field of an appended batch (leader_epochs.py: the leader epoch).
LEADER_EPOCH_FIELD = struct.Struct(">i")
# A batch smaller than this is copied into the append buffer; a larger one is written from
# the request's own bytes (pwritev), which must then not change: they are immutable bytes.
_COPY_BELOW = 4096
SCAN_CHUNK = 1024 * 1024


class PartitionLog(SegmentedLog):
    """Record batches of one topic partition with broker-assigned offsets."""

    def __init__(self, directory: Path, config: LogConfig | None = None, plan=None,
                 fence=None) -> None:
        self.config = config or LogConfig()
        super().__init__(directory, self.config.segment_bytes)
        self._log_start = 0
        # The leader epoch this log is written at and its history (leader_epochs.py).
        self.leader_epoch = leader_epochs.leader_epoch_of(plan.epoch) if plan is not None else 0
        self._leader_epoch_field = LEADER_EPOCH_FIELD.pack(self.leader_epoch)
        self._leader_epochs: list[tuple[int, int]] = []
        self._open(plan, fence, "partition directory")

    # -- opening -------------------------------------------------------------------------

    def _recover(self, plan=None) -> None:
        sources = self._open_sources(plan)
        if not sources and plan is None:
            self._new_active_segment(0)
        # Batch CRCs are not checked again below the recovery point (recovery_point.py);
        # the headers are still walked there, for the index.
        k, trusted, _ = self._trusted_prefix(plan, sources)
        previous_end = 0
        for i, source in enumerate(sources):
            seg = self._segment_from(source)
            self._segments.append(seg)
            if seg.base_offset < previous_end:
                raise CorruptDataError(
                    f"segment {seg.path} starts at offset {seg.base_offset}, before the previous "
                    f"segment ends ({previous_end})")
            later = sources[i + 1:]
            crc_from = seg.size if i < k else trusted if i == k else 0
            if not self._scan(seg, last=not later, crc_from=crc_from) and later:
                log.warning("segment %s was cut: %s %d later segment(s) that were never durable",
                            seg.path, "removing" if seg.own else "not inheriting", len(later))
                self._drop_sources(later)
                break
            previous_end = seg.next_offset
        if plan is None:
            self._sync_recovered()
            self._end_offset = self._durable_end = self._segments[-1].next_offset
            stored = self._stored_log_start(self.directory)
        else:
            stored = plan.log_start if not plan.resumed else None
            self._finish_open(plan, log_start=stored)
            if plan.resumed:
                stored = self._stored_log_start(self.directory)
        self._log_start = self._segments[0].base_offset
        if stored is not None:
            self._log_start = min(max(self._log_start, stored), self._end_offset)
        if plan is not None:
            self._begin_leader_epoch(plan)

    def _begin_leader_epoch(self, plan) -> None:
        """Read this epoch directory's leader-epoch history; a new leader epoch begins at
        the log end and is written down before anything is appended at it."""
        entries = leader_epochs.read(plan.target)
        if not entries and not (plan.resumed or plan.new):
            entries = list(plan.leader_epochs)
        if self.leader_epoch > 0 and (not entries or entries[-1][0] < self.leader_epoch):
            entries = leader_epochs.assign(entries or [(0, self._log_start)], self.leader_epoch, self._end_offset)
            leader_epochs.write(plan.target, entries)
        self._leader_epochs = entries

    def leader_epoch_history(self) -> list[tuple[int, int]]:
        """(leader epoch, start offset) entries, oldest first, over the current log start."""
        return leader_epochs.effective(self._leader_epochs, self._log_start)

    def _stored_log_start(self, directory: Path) -> int | None:
        checkpoint = directory / LOG_START_FILE
        if not checkpoint.exists():
            return None
        try:
            return int(checkpoint.read_text().strip())
        except (OSError, ValueError) as exc:
            raise CorruptDataError(f"cannot read log start offset from {checkpoint}: {exc}") from exc

    def _scan(self, seg: Segment, last: bool, crc_from: int = 0) -> bool:
        """Walk the batches of `seg`: build its index, next offset and max timestamp.
        Batch CRCs are checked in the last segment only, from byte `crc_from` on. Cut the file at the first torn or
        invalid batch and return False; return True if the segment was whole. In an older
        segment only a crash artifact (torn batch, zero-filled tail) is cut; other damage
        raises `CorruptDataError`."""
        fd, size, interval = seg.fd, seg.size, self.config.index_interval_bytes
        window, window_start = b"", 0
        pos = 0
        problem = None
        torn = False
        while pos < size:
            if size - pos < HEADER_SIZE:
                problem = f"torn batch header at byte {pos} ({size - pos} of {HEADER_SIZE} bytes)"
                torn = True
                break
            if pos + HEADER_SIZE > window_start + len(window):
                window, window_start = os.pread(fd, SCAN_CHUNK, pos), pos
            h = parse_header(window, pos - window_start)
            problem = header_problem(h)
            if problem is not None:
                problem = f"batch at byte {pos}: {problem}"
                break
            if pos + h.size > size:
                problem = f"torn batch at byte {pos}: batchLength {h.batch_length} runs {pos + h.size - size} bytes past the end"
                torn = True
                break
            if h.base_offset < seg.next_offset:
                problem = f"batch at byte {pos}: base offset {h.base_offset} goes backwards (expected >= {seg.next_offset})"
                break
            if last and pos >= crc_from:
                if pos + h.size > window_start + len(window):
                    window, window_start = os.pread(fd, max(SCAN_CHUNK, h.size), pos), pos
                start = pos - window_start
                if crc32c.crc32c(memoryview(window)[start + CRC_START:start + h.size]) != h.crc:
                    problem = f"batch at byte {pos}: CRC mismatch"
                    break
            self._index_batch(seg, pos, h.base_offset, interval)
            if h.max_timestamp > seg.max_timestamp:
                seg.max_timestamp = h.max_timestamp
            seg.next_offset = h.last_offset + 1
            pos += h.size
        if problem is None:
            return True
        if not last and not torn and zero_tail_start(fd, pos, size) > pos + HEADER_SIZE:
            raise CorruptDataError(
                f"segment {seg.path}: {problem}, followed by non-zero data; an older segment is "
                "damaged (not a torn write), refusing to cut durable records")
        self._cut_file(seg, pos, problem)
        return False

    @staticmethod
    def _index_batch(seg: Segment, pos: int, base_offset: int, interval: int) -> None:
        if seg.last_indexed_position < 0 or pos - seg.last_indexed_position >= interval:
            seg.index_offsets.append(base_offset)
            seg.index_positions.append(pos)
            seg.last_indexed_position = pos

    # -- state ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset a fetch may ask for."""
        return self._log_start

    # -- writing -------------------------------------------------------------------------

    def append(self, batch: bytes) -> int:
        """Assign the next offset to a v2 record batch, buffer it, return its base offset.

        The broker validates the batch (CRC, records) beforehand; storage checks only the
        header fields it relies on and raises `InvalidBatchError` if they are wrong.
        """
        n = len(batch)
        if n < HEADER_SIZE:
            raise InvalidBatchError(f"partition {self.directory}: batch of {n} bytes is shorter than a v2 header")
        h = parse_header(batch)
        problem = header_problem(h)
        if problem is None and h.size != n:
            problem = f"batchLength {h.batch_length} does not match the {n} bytes given"
        if problem is not None:
            raise InvalidBatchError(f"partition {self.directory}: {problem}")
        with self._lock:
            self._check_writable()
            if self.fence is not None:
                self.check_fence()  # fail fast; the write itself is checked at flush
            seg = self._write_locked(n)
            base = self._end_offset
            pos = seg.size
            # The batch is written as received, by reference; its base offset and its
            # partition leader epoch (both outside the CRC) are the pieces made here: Kafka
            # stamps the leader's epoch on every batch it appends, and clients commit it as
            # the leader epoch of the offsets they read.
            self._buffer_copy(BASE_OFFSET.pack(base) + bytes(batch[8:12]) + self._leader_epoch_field)
            if n >= _COPY_BELOW and type(batch) is bytes:
                self._buffer_ref(memoryview(batch)[16:])
            else:
                self._buffer_copy(memoryview(batch)[16:])
            seg.size += n
            self._index_batch(seg, pos, base, self.config.index_interval_bytes)
            if h.max_timestamp > seg.max_timestamp:
                seg.max_timestamp = h.max_timestamp
            self._end_offset = seg.next_offset = base + h.last_offset_delta + 1
            if self._pending_bytes >= FLUSH_THRESHOLD:
                self._flush_locked()
            return base

    # -- reading -------------------------------------------------------------------------

    def _flush_for_read(self) -> None:
        if self._pending:
            self.flush()

    def _segment_for(self, offset: int) -> int | None:
        """Index of the segment holding `offset` (or the first one after a gap)."""
        segs = self._segments
        i = bisect_right([s.base_offset for s in segs], offset) - 1
        i = max(i, 0)
        while i < len(segs) and segs[i].next_offset <= offset:
            i += 1
        return i if i < len(segs) else None

    def _find_batch(self, seg: Segment, offset: int) -> tuple[int, int]:
        """(byte position, size) of the first batch in `seg` whose last offset >= offset."""
        k = bisect_right(seg.index_offsets, offset) - 1
        pos = seg.index_positions[k] if k >= 0 else 0
        while pos < seg.size:
            h = parse_header(self._pread(seg, HEADER_SIZE, pos))
            if h.last_offset >= offset:
                return pos, h.size
            pos += h.size
        raise CorruptDataError(f"segment {seg.path}: no batch holds offset {offset} below {seg.next_offset}")

    def _pread(self, seg: Segment, n: int, pos: int) -> bytes:
        try:
            data = os.pread(seg.fd, n, pos)
        except OSError as exc:
            raise StorageError(f"cannot read {seg.path} at byte {pos}: {exc}") from exc
        if len(data) != n:
            raise CorruptDataError(f"segment {seg.path}: short read of {len(data)}/{n} bytes at byte {pos}")
        return data

    def read(self, fetch_offset: int, max_bytes: int, upto: int | None = None) -> bytes:
        """Whole batches starting with the one that holds `fetch_offset`, up to `max_bytes`
        but always at least one batch (KIP-74). The first batch may start before
        `fetch_offset` (clients skip the earlier records). Reads stay within one segment.
        With `upto` (a batch boundary: the last stable offset of read_committed), no batch
        starting at or after it is returned. Returns b"" at the log end; raises
        `OffsetOutOfRangeError` outside [log_start_offset, log_end_offset]."""
        found = self._locate(fetch_offset, max_bytes, upto)
        if found is None:
            return b""
        seg, pos, size = found
        return self._pread(seg, size, pos)

    def read_slice(self, fetch_offset: int, max_bytes: int, upto: int | None = None) -> RecordsSlice | bytes:
        """What `read` would return, as a `RecordsSlice` of the segment file (for sendfile)
        when it is at least SLICE_MIN_BYTES; smaller answers are read into bytes."""
        found = self._locate(fetch_offset, max_bytes, upto)
        if found is None:
            return b""
        seg, pos, size = found
        if size < SLICE_MIN_BYTES:
            return self._pread(seg, size, pos)
        end_offset = self._end_of_batches(seg, pos, pos + size)
        try:
            # Its own descriptor: retention or a hand-over may close the segment's meanwhile.
            fd = os.dup(seg.fd)
        except OSError as exc:
            raise StorageError(f"cannot read {seg.path}: {exc}") from exc
        return RecordsSlice(fd, pos, size, end_offset)

    def _end_of_batches(self, seg: Segment, start: int, stop: int) -> int:
        """The offset after the last batch of `seg` that ends at byte `stop` (batches start
        at `start`): found from the last index entry before `stop`."""
        k = bisect_left(seg.index_positions, stop) - 1
        q = max(start, seg.index_positions[k]) if k >= 0 else start
        while True:
            base, length = BASE_AND_LENGTH.unpack(self._pread(seg, LOG_OVERHEAD, q))
            if q + LOG_OVERHEAD + length >= stop:
                (last_delta,) = LAST_OFFSET_DELTA.unpack(self._pread(seg, LAST_OFFSET_DELTA.size, q + LAST_OFFSET_DELTA_AT))
                return base + last_delta + 1
            q += LOG_OVERHEAD + length

    def _locate(self, fetch_offset: int, max_bytes: int, upto: int | None) -> tuple[Segment, int, int] | None:
        """(segment, byte position, byte count) of what `read` returns; None for nothing."""
        end = self._end_offset
        if upto is not None and fetch_offset >= upto:
            return None
        if fetch_offset == end:
            return None
        if not self._log_start <= fetch_offset < end:
            raise OffsetOutOfRangeError(
                f"partition {self.directory}: offset {fetch_offset} outside [{self._log_start}, {end}]")
        self._flush_for_read()
        i = self._segment_for(fetch_offset)
        if i is None:
            return None
        seg = self._segments[i]
        pos, first_size = self._find_batch(seg, max(fetch_offset, seg.base_offset))
        limit = pos + min(seg.size - pos, max(max_bytes, first_size))
        # Whole batches only, and none from `upto` on. Batches before an index entry that
        # lies within the limit (and below `upto`) all qualify: start the walk there.
        q = pos + first_size
        k = bisect_right(seg.index_positions, limit)
        if upto is not None:
            k = min(k, bisect_right(seg.index_offsets, upto))
        if k > 0 and seg.index_positions[k - 1] > q:
            q = seg.index_positions[k - 1]
        while q + LOG_OVERHEAD <= limit:
            base, length = BASE_AND_LENGTH.unpack(self._pread(seg, LOG_OVERHEAD, q))
            if q + LOG_OVERHEAD + length > limit or (upto is not None and base >= upto):
                break
            q += LOG_OVERHEAD + length
        return seg, pos, q - pos

    def scan_batches(self, from_offset: int, prefix: int = 128):
        """For every batch from the one holding `from_offset` to the log end: its first
        `prefix` bytes (the header and the start of its records), in offset order. For
        rebuilding state kept beside the log (producer state); reads whole chunks."""
        self._flush_for_read()
        i = self._segment_for(max(from_offset, self._log_start))
        if i is None:
            return
        for seg in self._segments[i:]:
            pos = self._find_batch(seg, from_offset)[0] if seg.base_offset <= from_offset < seg.next_offset else 0
            window, window_start = b"", pos
            while pos < seg.size:
                if pos + HEADER_SIZE > window_start + len(window):
                    window, window_start = self._pread(seg, min(SCAN_CHUNK, seg.size - pos), pos), pos
                h = parse_header(window, pos - window_start)
                start = pos - window_start
                if start + prefix > len(window) and pos + min(prefix, h.size) <= seg.size:
                    window, window_start = self._pread(seg, min(max(SCAN_CHUNK, prefix), seg.size - pos), pos), pos
                    start = 0
                yield window[start:start + min(prefix, h.size)]
                pos += h.size

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) for ListOffsets: the first batch whose maxTimestamp >=
        `timestamp`, answered with that batch's base offset (clamped to the log start) and
        its maxTimestamp. Kafka would return the exact first record; the batch base offset
        is at or before it, so a consumer seeking there sees no record too late. None when
        no batch qualifies."""
        self._flush_for_read()
        for seg in self._segments:
            if seg.max_timestamp < timestamp or seg.next_offset <= self._log_start:
                continue
            pos = 0
            while pos < seg.size:
                h = parse_header(self._pread(seg, HEADER_SIZE, pos))
                if h.max_timestamp >= timestamp and h.last_offset >= self._log_start:
                    return max(h.base_offset, self._log_start), h.max_timestamp
                pos += h.size
        return None

    # -- retention -----------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Delete old segments by `retention_ms` (segment max timestamp older than
        now_ms - retention_ms), by `retention_bytes` (Kafka's rule: drop the oldest segment
        while the remaining ones still hold at least retention_bytes), and below the log
        start offset; returns the number of segments deleted. Segments without timestamps
        (maxTimestamp -1) are kept by time retention."""
        cfg = self.config
        deleted = 0
        with self._lock:
            self._check_writable()
            segs = self._segments

            def expired(seg: Segment) -> bool:
                return cfg.retention_ms >= 0 and seg.max_timestamp >= 0 and now_ms - seg.max_timestamp > cfg.retention_ms

            while len(segs) > 1 and (segs[0].next_offset <= self._log_start or expired(segs[0])):
                self._delete_segment(segs.pop(0))
                deleted += 1
            if len(segs) == 1 and segs[0].size > 0 and expired(segs[0]):
                self._roll_locked()
                self._delete_segment(segs.pop(0))
                deleted += 1
            if cfg.retention_bytes >= 0:
                total = sum(s.size for s in segs)
                while len(segs) > 1 and total - segs[0].size >= cfg.retention_bytes:
                    total -= segs[0].size
                    self._delete_segment(segs.pop(0))
                    deleted += 1
            self._log_start = max(self._log_start, segs[0].base_offset)
        if deleted:
            log.info("retention deleted %d segments of %s; log start offset now %d",
                     deleted, self.directory, self._log_start)
        return deleted

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to `offset` (DeleteRecords), persist it, and delete
        the segments entirely below it; returns the new log start offset."""
        if not 0 <= offset <= self._end_offset:
            raise OffsetOutOfRangeError(
                f"partition {self.directory}: cannot delete records before {offset}; log end is {self._end_offset}")
        if offset > self._log_start:
            self._check_writable()
            self.check_fence()
            write_atomically(self.directory / LOG_START_FILE, [f"{offset}\n".encode()])
            self._log_start = offset
            with self._lock:
                segs = self._segments
                while len(segs) > 1 and segs[0].next_offset <= offset:
                    self._delete_segment(segs.pop(0))
        return self._log_start

    def delete(self) -> None:
        """Close the log and remove its directory (topic deletion)."""
        self.close()
        try:
            shutil.rmtree(self.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete partition directory {self.directory}: {exc}") from exc
