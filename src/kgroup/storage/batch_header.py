"""The fixed 61-byte header of a Kafka record batch v2 (magic 2), as storage needs it.

    offset  field                 type
    0       baseOffset            int64   (rewritten by the broker; not covered by the CRC)
    8       batchLength           int32   (bytes after this field: total size - 12)
    12      partitionLeaderEpoch  int32
    16      magic                 int8    (2)
    17      crc                   uint32  CRC32C of bytes 21..end
    21      attributes            int16
    23      lastOffsetDelta       int32
    27      baseTimestamp         int64
    35      maxTimestamp          int64
    43      producerId            int64
    51      producerEpoch         int16
    53      baseSequence          int32
    57      recordCount           int32
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: total size = batchLength + 12
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
CRC_START = 21
BASE_OFFSET = struct.Struct(">q")
_LENGTH_MAGIC = struct.Struct(">i4xb")  # batchLength at 8, magic at 16
_LAST_DELTA = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class StoredBatchHeader:
    """The fields of a v2 batch header that storage uses."""

    base_offset: int
    batch_length: int
    magic: int
    crc: int
    last_offset_delta: int
    max_timestamp: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on disk."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def parse_header(data: bytes | memoryview, at: int = 0) -> StoredBatchHeader:
    """Parse the header at `data[at:]` (at least 61 bytes must be there)."""
    (base, length, _epoch, magic, crc, _attrs, last_delta, _base_ts, max_ts,
     _pid, _pepoch, _seq, count) = HEADER.unpack_from(data, at)
    return StoredBatchHeader(base, length, magic, crc, last_delta, max_ts, count)


def header_problem(h: StoredBatchHeader) -> str | None:
    """Why a parsed header cannot be a v2 batch, or None."""
    if h.magic != 2:
        return f"magic {h.magic} (only record batch v2, magic 2, is supported)"
    if h.batch_length < MIN_BATCH_LENGTH:
        return f"batchLength {h.batch_length} is below the v2 minimum {MIN_BATCH_LENGTH}"
    if h.last_offset_delta < 0:
        return f"lastOffsetDelta {h.last_offset_delta} is negative"
    return None
