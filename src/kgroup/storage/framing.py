"""Framed records: the on-disk unit of the group-metadata log and of snapshots.

A frame is `uint32 length | uint32 CRC32C(payload) | payload` (big-endian), length > 0.
Storage treats the payload as opaque bytes produced by the core.

`FrameScan` reads the frames of a file and stops at the first frame that is torn (its length
runs past the end of the data) or corrupt (CRC mismatch, zero or absurd length); the caller
decides whether that means "cut the tail" (active segment on open) or "raise".
"""

from __future__ import annotations

import os
import struct
from typing import Iterator

import crc32c

FRAME_HEADER = struct.Struct(">II")
HEADER_SIZE = FRAME_HEADER.size
# A length above this is treated as corruption rather than as a torn frame.
MAX_FRAME_BYTES = 1 << 30
READ_CHUNK = 4 * 1024 * 1024

_crc = crc32c.crc32c
_pack = FRAME_HEADER.pack


def encode_frame(payload: bytes) -> bytes:
    """One frame holding `payload` (which must not be empty)."""
    return _pack(len(payload), _crc(payload)) + payload


def frame_header(payload: bytes) -> bytes:
    """The 8-byte header of the frame holding `payload` (append it, then the payload)."""
    return _pack(len(payload), _crc(payload))


class FrameScan:
    """Iterate the payloads of the frames in `fd` between byte positions `start` and `end`.

    After iteration: `valid_end` is the byte position just past the last valid frame, `count`
    the number of frames yielded, and `problem` is None if the scan reached `end` cleanly, or
    a sentence saying why it stopped ("torn frame ...", "CRC mismatch ...", ...); `torn` is
    True when the stop is a frame running past the end.
    """

    __slots__ = ("fd", "start", "end", "chunk_size", "valid_end", "count", "problem", "torn",
                 "bad_end")

    def __init__(self, fd: int, start: int, end: int, chunk_size: int = READ_CHUNK) -> None:
        self.fd = fd
        self.start = start
        self.end = end
        self.chunk_size = chunk_size
        self.valid_end = start
        self.count = 0
        self.problem: str | None = None
        self.torn = False  # the problem is a frame running past the end (a crash artifact)
        self.bad_end = start  # where the bad frame ends (for corrupt, not torn, frames)

    def __iter__(self) -> Iterator[bytes]:
        fd, end, crc, unpack = self.fd, self.end, _crc, FRAME_HEADER.unpack_from
        pos = self.start  # file position of data[0]
        while pos < end:
            want = min(self.chunk_size, end - pos)
            data = os.pread(fd, want, pos)
            if len(data) < want:
                # The file is shorter than the caller believed (truncated under us).
                end = pos + len(data)
                self.end = end
            n = len(data)
            i = 0
            while True:
                if n - i < HEADER_SIZE:
                    break
                length, expected = unpack(data, i)
                if length == 0 or length > MAX_FRAME_BYTES:
                    self.valid_end = pos + i
                    self.bad_end = pos + i + HEADER_SIZE
                    self.problem = f"bad frame length {length} at byte {pos + i}"
                    return
                j = i + HEADER_SIZE + length
                if j > n:
                    break
                payload = data[i + HEADER_SIZE:j]
                if crc(payload) != expected:
                    self.valid_end = pos + i
                    self.bad_end = pos + j
                    self.problem = f"CRC mismatch in frame at byte {pos + i}"
                    return
                self.count += 1
                yield payload
                i = j
            self.valid_end = pos + i
            if pos + i >= end:
                return
            # An incomplete frame at the end of the chunk: torn if it runs past `end`,
            # otherwise read on from its start (with a chunk big enough to hold it).
            frame_start = pos + i
            if end - frame_start < HEADER_SIZE:
                self.torn = True
                self.problem = (f"torn frame header at byte {frame_start} "
                                f"({end - frame_start} of {HEADER_SIZE} bytes)")
                return
            length = unpack(data, i)[0] if n - i >= HEADER_SIZE else None
            if length is None:
                length = FRAME_HEADER.unpack(os.pread(fd, HEADER_SIZE, frame_start))[0]
            if length == 0 or length > MAX_FRAME_BYTES:
                self.bad_end = frame_start + HEADER_SIZE
                self.problem = f"bad frame length {length} at byte {frame_start}"
                return
            if frame_start + HEADER_SIZE + length > end:
                self.torn = True
                self.problem = (f"torn frame at byte {frame_start}: length {length} runs "
                                f"{frame_start + HEADER_SIZE + length - end} bytes past the end")
                return
            self.chunk_size = max(self.chunk_size, HEADER_SIZE + length)
            pos = frame_start



def zero_tail_start(fd: int, start: int, end: int, chunk_size: int = READ_CHUNK) -> int:
    """Where the run of zero bytes that ends the range [start, end) of `fd` begins (`end`
    if the last byte is not zero). A machine crash can leave such zero-filled blocks."""
    pos = end
    while pos > start:
        lo = max(start, pos - chunk_size)
        data = os.pread(fd, pos - lo, lo)
        stripped = len(data.rstrip(b"\0"))
        if stripped:
            return lo + stripped
        pos = lo
    return start


def is_crash_artifact(fd: int, scan: FrameScan) -> bool:
    """True if the problem `scan` stopped at looks like an unfinished write rather than
    damage: a frame torn by the end of the file, or a bad frame from which on the rest of
    the file is zeros."""
    return scan.torn or zero_tail_start(fd, scan.valid_end, scan.end) <= scan.bad_end
