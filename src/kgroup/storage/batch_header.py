"""The fields of a record batch v2 header that storage indexes by (kgroup/batch_layout.py
has the layout): parsed, and checked for what a v2 batch must be."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.batch_layout import (  # noqa: F401 (storage's modules take them from here)
    BASE_OFFSET,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchExtent,
)


@dataclass(frozen=True, slots=True)
class StoredBatchHeader(BatchExtent):
    """The fields of a v2 batch header that storage uses."""

    base_offset: int
    batch_length: int
    magic: int
    crc: int
    last_offset_delta: int
    max_timestamp: int
    record_count: int


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
